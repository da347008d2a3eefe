"""Exact resume after kill -9: real training processes (examples/run_glue.py, a classifier, and
examples/run_pretraining.py, MLM + NSP) are killed with SIGKILL at several points (between
checkpoints, and halfway through writing optimizer.pt, model.safetensors or one rank's RNG
state), then the same command is run again. The scripts resume from the newest complete
checkpoint and the run ends with exactly the uninterrupted run's logged losses, gradient norms,
learning rates and final weights (bit for bit); single process and 2-process DDP (gloo, CPU).

    pytest tests/reliability/test_resume_kill9.py -m slow      # ~4 minutes on 2 cores
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hf_variants.hub.checkpoints import checkpoint_folders

pytestmark = pytest.mark.slow

from tests.common.launch import TWO_PROCESS_LAUNCH, run_processes
from tests.common.paths import COMMON_DIR, EXAMPLES_DIR

MAX_STEPS, SAVE_STEPS = 8, 2
COMMON = [
    "--max_steps",
    str(MAX_STEPS),
    "--save_steps",
    str(SAVE_STEPS),
    "--logging_steps",
    "1",
    "--per_device_train_batch_size",
    "4",
    "--max_seq_length",
    "32",
    "--seed",
    "0",
    "--use_cpu",
    "true",
    "--report_to",
    "none",
    "--disable_tqdm",
    "true",
]

# (crash point, complete checkpoints expected afterwards). Single process: killed between two
# checkpoints, then while writing the next checkpoint's optimizer state, then while writing a
# later checkpoint's weights. Two processes: rank 1 killed while writing its RNG state, then
# rank 0 killed between checkpoints.
SCHEDULES = {
    1: [
        ("after_step:3", [2]),
        ("writing:optimizer.pt:1", [2]),
        ("writing:model.safetensors:2", [2, 4]),
        ("none", None),
    ],
    2: [("writing:rng_state_1.pth:2@1", [2]), ("after_step:5@0", [2, 4]), ("none", None)],
}


@pytest.fixture(scope="module")
def glue_train_file(tmp_path_factory) -> str:
    from hf_variants.data import load_named_dataset
    from tests.examples.test_examples_processing import label_names_as_text, shuffled_rows, write_json_lines

    reviews = load_named_dataset("hf_variants/rt_polarity")
    names = reviews["train"].features["label"].names
    # 24 rows: runs cross an epoch boundary (6 steps per epoch, 3 with two processes).
    rows = label_names_as_text(shuffled_rows(reviews["train"], 24), "label", names)
    return write_json_lines(tmp_path_factory.mktemp("glue") / "train.jsonl", rows)


def script_arguments(script: str, glue_train_file: str, tokenizer: str | None) -> list[str]:
    if script == "run_glue":
        from tests.examples.test_examples_processing import MINILM

        return [
            "--model_name_or_path",
            "bert-tiny",
            "--tokenizer_name",
            MINILM,
            "--train_file",
            glue_train_file,
            "--do_train",
            "--learning_rate",
            "1e-3",
            "--ddp_find_unused_parameters",
            "false",
        ]
    # tokenizers' WordPiece training is not reproducible run to run: every run after the first
    # uses the first run's tokenizer (as a real resumed run uses the one saved in output_dir).
    return [
        "--model_name_or_path",
        "bert-tiny",
        "--corpus",
        "austen",
        "--max_documents",
        "12",
        "--vocab_size",
        "600",
        "--learning_rate",
        "2e-3",
        "--warmup_steps",
        "0.1",
        "--per_device_eval_batch_size",
        "32",
        "--ddp_find_unused_parameters",
        "true",
    ] + (["--tokenizer_name", tokenizer] if tokenizer else [])


def run(script: str, processes: int, crash: str, output_dir: Path, arguments: list[str]) -> subprocess.CompletedProcess:
    launcher = TWO_PROCESS_LAUNCH if processes == 2 else [sys.executable]
    command = launcher + [str(COMMON_DIR / "crash_points.py"), crash, str(EXAMPLES_DIR / f"{script}.py")]
    command += arguments + COMMON + ["--output_dir", str(output_dir)]
    return run_processes(command)


def logged_steps(output_dir: Path) -> list[dict]:
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return [
        {k: entry[k] for k in ("step", "loss", "grad_norm", "learning_rate")} for entry in history if "loss" in entry
    ]


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("script", ["run_glue", "run_pretraining"])
def test_killed_runs_resume_to_the_uninterrupted_result_exactly(script, processes, glue_train_file, tmp_path):
    reference_dir, interrupted_dir = tmp_path / "uninterrupted", tmp_path / "interrupted"
    finished = run(script, processes, "none", reference_dir, script_arguments(script, glue_train_file, None))
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-5000:]
    tokenizer = str(reference_dir)
    for crash, complete_after in SCHEDULES[processes]:
        result = run(script, processes, crash, interrupted_dir, script_arguments(script, glue_train_file, tokenizer))
        output = result.stdout + result.stderr
        if complete_after is None:
            assert result.returncode == 0, output[-6000:]
            break
        assert result.returncode != 0, f"{crash}: the run was not killed\n{output[-3000:]}"
        if processes == 1:
            assert result.returncode == -9, output[-3000:]  # SIGKILL, not an exception
        steps = sorted(int(folder.name.split("-")[1]) for folder in checkpoint_folders(interrupted_dir))
        assert steps == complete_after, (crash, steps)  # a half-written checkpoint never appears

    assert "resuming" in output.lower()
    reference, resumed = logged_steps(reference_dir), logged_steps(interrupted_dir)
    assert [entry["step"] for entry in reference] == list(range(1, MAX_STEPS + 1))
    assert resumed == reference  # every step's loss, gradient norm and learning rate, exactly
    final, again = load_file(reference_dir / "model.safetensors"), load_file(interrupted_dir / "model.safetensors")
    assert final.keys() == again.keys()
    assert all(torch.equal(final[name], again[name]) for name in final)
