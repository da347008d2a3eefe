"""research/evaluate_pretraining.py on a tiny BERT checkpoint (bert-tiny, a WordPiece tokenizer
trained on a few hundred real review sentences) in --quick mode: every task runs through the
real example scripts on real data, the report has per-seed scores and mean/std for both arms,
and the random twin is the class's own seeded initialisation. The checkpoint IS twin 42 (same
class, same seed), so the pretrained and twin runs of seed 42 must agree exactly: the two arms
get the identical schedule and loading path."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

import hf_variants  # noqa: F401  (registers the hfv_* classes the scripts load)
from research import evaluate_pretraining, evaluation_support
from tests.common.paths import REPO_ROOT
from tests.common.tiny_checkpoints import save_tiny_bert_checkpoint

pytestmark = pytest.mark.slow

SEED = 42


@pytest.fixture(scope="module")
def evaluate():
    return evaluate_pretraining


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """bert-tiny (BertForPreTraining) initialised under torch.manual_seed(42), with its tokenizer."""
    return save_tiny_bert_checkpoint(tmp_path_factory.mktemp("tiny-bert"), SEED, sentences=600, vocab_size=400)


@pytest.fixture(scope="module")
def report(evaluate, checkpoint, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("evaluation")
    result = evaluate.main(
        [
            "--model_name_or_path",
            str(checkpoint),
            "--output_dir",
            str(output_dir),
            "--quick",
            "--seeds",
            "2",
            "--tasks",
            "sentiment",
            "pos",
            "ner",
            "probe",
            "--keep_models",
        ]
    )
    return result, output_dir


def test_report_has_every_task_arm_and_seed_with_mean_and_std(report):
    result, output_dir = report
    assert json.loads((output_dir / "evaluation.json").read_text()) == result
    assert result["seeds"] == [SEED, SEED + 1]
    for task in ("sentiment", "pos", "ner"):
        entry = result["tasks"][task]
        assert entry["schedule"]["max_train_samples"] == 48  # --quick's subset
        for arm in ("pretrained", "random"):
            runs = [entry["runs"][arm][str(seed)] for seed in result["seeds"]]
            tests = [run["test"] for run in runs]
            assert all(0 <= score <= 100 for score in tests)
            assert entry[arm]["test"]["scores"] == tests
            assert entry[arm]["test"]["mean"] == pytest.approx(statistics.fmean(tests), abs=0.01)
            assert entry[arm]["test"]["std"] == pytest.approx(statistics.stdev(tests), abs=0.01)
            assert all(run["wall_s"] > 0 and run["train_loss"] > 0 for run in runs)
    # The trivial baselines are computed on the full data: the README's 50.4% / 84.x% levels.
    assert result["tasks"]["sentiment"]["baselines"]["majority_class"] == pytest.approx(50.4, abs=0.1)
    assert 80 < result["tasks"]["pos"]["baselines"]["most_frequent_tag"] < 90
    assert result["tasks"]["ner"]["baselines"]["all_O"] == 0.0
    assert result["tasks"]["ner"]["baselines"]["most_frequent_tag"] > 20
    table = (output_dir / "evaluation.md").read_text()
    assert table.count("\n") == 2 + 3 + 3  # header, 3 fine-tuning tasks, 3 probe rows
    assert "| sentiment | accuracy % |" in table and "(n=2)" in table


def test_pretrained_and_twin_runs_share_the_schedule_exactly(report):
    # The checkpoint is twin 42's exact weights, so seed 42 gives the same run on both arms.
    result, _ = report
    for task in ("sentiment", "pos", "ner"):
        runs = result["tasks"][task]["runs"]
        pretrained, twin = runs["pretrained"][str(SEED)], runs["random"][str(SEED)]
        assert (pretrained["validation"], pretrained["test"]) == (twin["validation"], twin["test"]), task
        assert pretrained["train_loss"] == pytest.approx(twin["train_loss"], rel=1e-6), task
    probe = result["tasks"]["probe"]["runs"]
    assert list(probe["pretrained"]) == [str(SEED)]  # the frozen pretrained encoder is probed once
    assert probe["pretrained"][str(SEED)]["sentiment"]["test"] == probe["random"][str(SEED)]["sentiment"]["test"]
    assert probe["pretrained"][str(SEED)]["pos"]["test"] == probe["random"][str(SEED)]["pos"]["test"]


def test_twins_are_the_seeded_class_init_and_differ_across_seeds(report, checkpoint):
    _, output_dir = report
    original = load_file(checkpoint / "model.safetensors")
    twin_42 = load_file(output_dir / "twins" / f"seed{SEED}" / "model.safetensors")
    twin_43 = load_file(output_dir / "twins" / f"seed{SEED + 1}" / "model.safetensors")
    assert original.keys() == twin_42.keys() == twin_43.keys()
    assert all(torch.equal(original[key], twin_42[key]) for key in original)
    matrices = [key for key in original if original[key].dim() == 2]  # the randomly initialised tensors
    assert len(matrices) >= 10
    assert all(not torch.equal(twin_42[key], twin_43[key]) for key in matrices)
    assert (output_dir / "twins" / f"seed{SEED}" / "tokenizer.json").is_file()


def test_resume_reuses_finished_runs(evaluate, report, checkpoint):
    result, output_dir = report
    again = evaluate.main(
        [
            "--model_name_or_path",
            str(checkpoint),
            "--output_dir",
            str(output_dir),
            "--quick",
            "--seeds",
            "2",
            "--tasks",
            "sentiment",
            "--resume",
            "--keep_models",
        ]
    )
    assert again["tasks"]["sentiment"]["runs"] == result["tasks"]["sentiment"]["runs"]  # wall times too: not re-run


@pytest.mark.skipif(torch.accelerator.is_available(), reason="checks the CPU-only path")
def test_bf16_without_an_accelerator_fine_tunes_with_cpu_autocast(evaluate, checkpoint, tmp_path):
    """--bf16 on a CPU-only machine is CPU autocast (Trainer refuses --bf16 there without use_cpu)."""
    result = evaluate.main(
        [
            "--model_name_or_path",
            str(checkpoint),
            "--output_dir",
            str(tmp_path),
            "--quick",
            "--seeds",
            "1",
            "--tasks",
            "pos",
            "--bf16",
            "--no_random_twin",
        ]
    )
    assert result["bf16"] and result["device"] == "cpu"
    assert 0 <= result["tasks"]["pos"]["pretrained"]["test"]["mean"] <= 100


def test_most_frequent_tag_baseline_and_probe_helpers():
    support = evaluation_support
    predicted = support.most_frequent_tags(
        [["the", "run", "run"], ["a", "run"]], [["DT", "NN", "VB"], ["DT", "NN"]], [["the", "run", "unseen"]]
    )
    assert predicted == [["DT", "NN", "DT"]]  # unseen -> the most frequent tag overall (DT and NN tie: first seen)
    assert support.majority_baseline([0, 1, 1], [1, 0, 1, 1]) == 75.0
    assert support.mean_std([1.0]) == (1.0, 0.0)
    assert support.mean_std([75.6, 76.7]) == pytest.approx((76.15, 0.778), abs=1e-3)


def test_bad_arguments_are_named(evaluate, checkpoint, tmp_path):
    base = ["--model_name_or_path", str(checkpoint), "--output_dir", str(tmp_path)]
    with pytest.raises(ValueError, match="unknown task.*'glue'"):
        evaluate.main(base + ["--tasks", "glue"])
    with pytest.raises(ValueError, match="--seeds must be at least 1"):
        evaluate.main(base + ["--seeds", "0"])
    with pytest.raises(ValueError, match="no config.json"):
        evaluate.main(["--model_name_or_path", str(tmp_path), "--output_dir", str(tmp_path)])
    with pytest.raises(ValueError, match="TASK.FIELD=VALUE"):
        evaluate.main(base + ["--tasks", "pos", "--set", "learning_rate=1e-4"])
    with pytest.raises(ValueError, match="'ner' is not among --tasks"):
        evaluate.main(base + ["--tasks", "pos", "--set", "ner.learning_rate=1e-4"])


def test_the_module_entry_point_runs_the_script_and_reports_bad_input(tmp_path):
    """``python -m research.evaluate_pretraining`` from the checkout: the study's own entry point."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "research.evaluate_pretraining",
            "--model_name_or_path",
            str(tmp_path),
            "--output_dir",
            str(tmp_path / "out"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 1 and "no config.json" in result.stderr, result.stderr[-2000:]
