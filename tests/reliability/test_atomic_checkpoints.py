"""Trainer checkpoints are complete or absent, and resuming skips incomplete ones.

In-process tests run transformers' real Trainer on a tiny classifier; the finding of issue #21
(kill -9 while a checkpoint is written bricks the output folder) is reproduced with a real
SIGKILL of `examples/run_glue.py` (tests/common/crash_points.py)."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import sys
from pathlib import Path

import datasets
import pytest
import torch
from transformers import TrainingArguments

import hf_variants
from hf_variants.hub.atomic import is_staging_name
from hf_variants.hub.checkpoints import checkpoint_problems, last_complete_checkpoint, resolve_checkpoint
from hf_variants.hub.trainer import CheckpointSafeTrainer
from tests.common.launch import assert_succeeded, run_processes
from tests.common.paths import COMMON_DIR
from tests.common.paths import REPO_ROOT as ROOT


def tiny_classifier() -> torch.nn.Module:
    torch.manual_seed(0)
    config = hf_variants.BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=2,
    )
    return hf_variants.BertForSequenceClassification(config)


def toy_data(rows: int = 32) -> datasets.Dataset:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 99, (rows, 12), generator=generator)
    return datasets.Dataset.from_dict({"input_ids": ids.tolist(), "labels": (ids[:, 0] % 2).tolist()})


def trainer_for(output_dir: Path, max_steps: int = 6, **arguments) -> CheckpointSafeTrainer:
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        save_steps=2,
        logging_steps=1,
        learning_rate=1e-3,
        use_cpu=True,
        report_to="none",
        disable_tqdm=True,
        seed=0,
        **arguments,
    )
    data = toy_data()
    return CheckpointSafeTrainer(
        model=tiny_classifier(), args=args, train_dataset=data, eval_dataset=data.select(range(8))
    )


def staging_leftovers(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if is_staging_name(name)]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A 6-step run with complete checkpoints at steps 2, 4 and 6."""
    output_dir = tmp_path_factory.mktemp("run") / "out"
    trainer_for(output_dir).train()
    return output_dir


def test_checkpoints_are_complete_and_no_staging_remains(finished_run):
    assert [p.name for p in sorted(finished_run.glob("checkpoint-*"))] == [
        "checkpoint-2",
        "checkpoint-4",
        "checkpoint-6",
    ]
    for folder in finished_run.glob("checkpoint-*"):
        assert checkpoint_problems(folder) == []
        assert {"model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json"} <= set(
            os.listdir(folder)
        )
    assert staging_leftovers(finished_run) == []
    assert last_complete_checkpoint(finished_run) == str(finished_run / "checkpoint-6")


def damaged_copies(finished_run: Path, destination: Path) -> dict[str, str]:
    """checkpoint-2/4 complete; newer ones damaged the ways a kill or a full disk leaves them."""
    shutil.copytree(finished_run, destination)
    damage = {}

    def copy(step: int) -> Path:
        folder = destination / f"checkpoint-{step}"
        shutil.copytree(destination / "checkpoint-4", folder)
        return folder

    optimizer = copy(10) / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[: optimizer.stat().st_size // 2])
    damage["checkpoint-10"] = "optimizer.pt is truncated"
    (copy(12) / "trainer_state.json").unlink()
    damage["checkpoint-12"] = "no trainer_state.json"
    weights = copy(14) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    damage["checkpoint-14"] = "model.safetensors: truncated"
    (copy(16) / "trainer_state.json").write_text('{"global_step": 16, "log_hist')
    damage["checkpoint-16"] = "trainer_state.json is not valid JSON"
    (copy(18) / "model.safetensors").unlink()
    damage["checkpoint-18"] = "no model weights"
    shutil.rmtree(destination / "checkpoint-6")
    return damage


def test_incomplete_checkpoints_are_skipped_with_a_warning_naming_them(finished_run, tmp_path, caplog):
    run = tmp_path / "damaged"
    damage = damaged_copies(finished_run, run)
    for name, problem in damage.items():
        problems = checkpoint_problems(run / name)
        assert len(problems) == 1 and problem in problems[0], (name, problems)
    with caplog.at_level(logging.WARNING, logger="hf_variants.hub.checkpoints"):
        assert last_complete_checkpoint(run) == str(run / "checkpoint-4")
    warned = caplog.text
    for name, problem in damage.items():
        assert f"{run / name} (" in warned and problem in warned
    # An explicit incomplete folder is refused, saying what is missing.
    with pytest.raises(ValueError, match=r"checkpoint-12: the checkpoint is incomplete \(no trainer_state.json\)"):
        resolve_checkpoint(str(run / "checkpoint-12"), run)
    assert resolve_checkpoint("last", run) == resolve_checkpoint(True, run) == str(run / "checkpoint-4")
    (run / "empty").mkdir()
    with pytest.raises(ValueError, match="no complete checkpoint"):
        resolve_checkpoint("last", run / "empty")


def test_resume_last_goes_on_from_the_newest_complete_checkpoint(finished_run, tmp_path):
    run = tmp_path / "damaged"
    damaged_copies(finished_run, run)
    trainer = trainer_for(run)
    trainer.train(resume_from_checkpoint=True)  # transformers' own get_last_checkpoint would take checkpoint-18
    assert trainer.state.global_step == 6
    losses = {e["step"]: e["loss"] for e in trainer.state.log_history if "loss" in e}
    expected = {
        e["step"]: e["loss"]
        for e in json.loads((finished_run / "checkpoint-6" / "trainer_state.json").read_text())["log_history"]
        if "loss" in e
    }
    assert losses == expected  # steps 5-6 re-done from checkpoint-4 give the same losses


def test_a_write_failing_halfway_leaves_no_checkpoint_and_the_run_resumes(tmp_path, monkeypatch):
    real_save = torch.save
    calls = {"optimizer.pt": 0}

    def save_failing_on_second_optimizer(obj, f, *args, **kwargs):
        if isinstance(f, str) and os.path.basename(f) == "optimizer.pt":
            calls["optimizer.pt"] += 1
            if calls["optimizer.pt"] == 2:
                with open(f, "wb") as handle:
                    handle.write(b"PK\x03\x04 half an archive")
                raise OSError(errno.ENOSPC, "No space left on device (injected)", f)
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save_failing_on_second_optimizer)
    output_dir = tmp_path / "out"
    with pytest.raises(OSError, match="No space left"):
        trainer_for(output_dir).train()
    assert sorted(os.listdir(output_dir)) == ["checkpoint-2"]  # no checkpoint-4, no staging folder
    monkeypatch.setattr(torch, "save", real_save)
    trainer = trainer_for(output_dir)
    trainer.train(resume_from_checkpoint="last")
    assert trainer.state.global_step == 6 and last_complete_checkpoint(output_dir).endswith("checkpoint-6")


def test_best_checkpoint_path_and_rotation_survive_the_staging(tmp_path):
    output_dir = tmp_path / "out"
    trainer = trainer_for(
        output_dir,
        max_steps=8,
        eval_strategy="steps",
        eval_steps=2,
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model="loss",
        greater_is_better=False,
    )
    trainer.train()
    best = trainer.state.best_model_checkpoint
    assert best is not None and Path(best).parent == output_dir.resolve() and Path(best).is_dir()
    saved = json.loads((output_dir / "checkpoint-8" / "trainer_state.json").read_text())["best_model_checkpoint"]
    assert Path(saved).parent == output_dir.resolve() and Path(saved).is_dir()
    kept = sorted(p.name for p in output_dir.glob("checkpoint-*"))
    assert "checkpoint-8" in kept and Path(best).name in kept and len(kept) <= 2
    assert staging_leftovers(output_dir) == []


def test_final_save_keeps_the_checkpoints_and_replaces_the_model(finished_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    trainer = trainer_for(run)
    trainer.save_model()
    trainer.save_state()
    names = set(os.listdir(run))
    assert {
        "checkpoint-2",
        "checkpoint-4",
        "checkpoint-6",
        "model.safetensors",
        "config.json",
        "training_args.bin",
        "trainer_state.json",
    } <= names
    assert staging_leftovers(run) == [] and staging_leftovers(tmp_path) == []
    # A results file cut short by an earlier kill does not stop the next run's save_metrics.
    (run / "all_results.json").write_text('{"train_loss": 0.6')
    trainer.save_metrics("eval", {"eval_accuracy": 0.75})
    assert json.loads((run / "all_results.json").read_text()) == {"eval_accuracy": 0.75}
    assert json.loads((run / "eval_results.json").read_text()) == {"eval_accuracy": 0.75}


@pytest.mark.slow
def test_kill_9_while_writing_a_checkpoint_leaves_the_output_folder_usable(tmp_path):
    """Finding 1 of issue #21: run_glue killed (SIGKILL) halfway through writing optimizer.pt of
    its first checkpoint. Before atomic checkpoints, checkpoint-2/ was left with a truncated
    optimizer.pt and no trainer_state.json, and every later run in that folder failed with
    FileNotFoundError (the scripts auto-resume from the newest checkpoint-*)."""
    from hf_variants.data import load_named_dataset
    from tests.examples.test_examples_processing import MINILM, label_names_as_text, shuffled_rows, write_json_lines

    reviews = load_named_dataset("hf_variants/rt_polarity")
    names = reviews["train"].features["label"].names
    train = write_json_lines(
        tmp_path / "train.jsonl", label_names_as_text(shuffled_rows(reviews["train"], 24), "label", names)
    )
    output_dir = tmp_path / "out"
    command = [sys.executable, str(COMMON_DIR / "crash_points.py"), "writing:optimizer.pt:1", str(ROOT / "examples" / "run_glue.py"),
               "--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", train, "--do_train",
               "--max_seq_length", "32", "--per_device_train_batch_size", "4", "--max_steps", "4", "--save_steps", "2",
               "--seed", "0", "--use_cpu", "--report_to", "none", "--disable_tqdm", "true", "--output_dir", str(output_dir)]  # fmt: skip
    killed = run_processes(command, timeout=300)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert not (output_dir / "checkpoint-2").exists()  # the half-written checkpoint never took the name
    command[2] = "none"
    assert_succeeded(run_processes(command, timeout=300))
    assert json.loads((output_dir / "train_results.json").read_text())["train_samples"] == 24
    assert last_complete_checkpoint(output_dir) == str(output_dir.resolve() / "checkpoint-4")
    assert staging_leftovers(output_dir) == []
