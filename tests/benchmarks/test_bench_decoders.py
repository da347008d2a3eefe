"""benchmarks/bench_decoders.py on tiny scenarios: real data, real transformers reference models,
fresh worker processes, and its same-work checks (equal losses, identical generated tokens)."""

import dataclasses
import subprocess
import sys

import pytest

from benchmarks import bench_decoders, decoder_workloads

TINY_GPT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
TINY_T5 = dict(
    hidden_size=32, num_hidden_layers=2, decoder_layers=2, num_attention_heads=4, head_dim=8, intermediate_size=37
)
TINY = {
    "clm-tiny": bench_decoders.Scenario(
        "CLM, tiny GPT-2", "clm", "gpt2-mini", 4, 2, max_length=48, target=1.5, overrides=TINY_GPT
    ),
    "generate-t5-tiny": bench_decoders.Scenario(
        "greedy, tiny T5, 3 prompts", "generate", "t5-mini", 3, 1, new_tokens=4, target=1.2, overrides=TINY_T5
    ),
}


@pytest.fixture(scope="module")
def data_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench_decoders")
    decoder_workloads.prepare_data(folder, limit=1500)
    return folder


@pytest.mark.slow  # a fresh worker process (imports, two models, conversion): ~20 s on the loaded 2-core machine
def test_harness_measures_a_tiny_scenario_in_a_worker_process(data_folder, monkeypatch):
    monkeypatch.setenv("BENCH_DECODER_DATA", "")  # run() points its workers at the folder
    (row,) = bench_decoders.run(["clm-tiny"], reps=1, threads=1, quick=True, scenarios=TINY, data_folder=data_folder)
    assert row.startswith("| clm-tiny | CLM, tiny GPT-2 | ")
    assert "predicted; rows hold" in row and "ms/step" in row
    ratio = float(row.split(" | ")[2].split("×")[0])
    assert 0 < ratio < 100


def test_generation_rows_report_tokens_per_second(data_folder, monkeypatch):
    monkeypatch.setenv("BENCH_DECODER_DATA", str(data_folder))
    scenario = TINY["generate-t5-tiny"]
    sides, notes = bench_decoders.build_sides(scenario)
    result = {
        **notes,
        **bench_decoders.check_same_work(scenario, sides),
        "ours_s": 0.5,
        "theirs_s": 1.0,
        "ratio_median": 2.0,
        "ratio_min": 1.5,
        "ratio_max": 2.5,
        "ratio_best": 2.0,
    }
    row = bench_decoders.format_row("generate-t5-tiny", scenario, result, "1.00 1.00 1.00")
    assert "| 2.00× (1.50–2.50) | 2.00× | 1.2× yes | 24 / 12 tokens/s | identical tokens asserted |" in row


@pytest.mark.parametrize(
    "model, overrides",
    [("transformer-mini", TINY_T5 | {"head_dim": None} | bench_decoders.PAPER_MARIAN), ("t5-mini", TINY_T5)],
)
def test_seq2seq_sides_do_the_same_work(data_folder, monkeypatch, model, overrides):
    monkeypatch.setenv("BENCH_DECODER_DATA", str(data_folder))
    overrides = {k: v for k, v in overrides.items() if v is not None}
    scenario = bench_decoders.Scenario("tiny seq2seq", "seq2seq", model, 4, 1, overrides=overrides)
    sides, notes = bench_decoders.build_sides(scenario)
    checks = bench_decoders.check_same_work(scenario, sides)
    assert abs(checks["eval_loss"]["ours"] - checks["eval_loss"]["transformers"]) <= 1e-4 * checks["eval_loss"]["ours"]
    assert notes["real_source_tokens_per_step"] < notes["source_tokens_per_step"]  # real, length-varying sentences


def test_same_work_check_fails_when_the_sides_differ(data_folder, monkeypatch):
    import torch

    monkeypatch.setenv("BENCH_DECODER_DATA", str(data_folder))
    scenario = dataclasses.replace(TINY["generate-t5-tiny"], batch_size=2)
    sides, _ = bench_decoders.build_sides(scenario)
    with torch.no_grad():
        sides[1].model.lm_head.weight.mul_(-1.0)  # ours now predicts other tokens
    with pytest.raises(AssertionError, match="generated tokens differ"):
        bench_decoders.check_same_work(scenario, sides)


def test_write_replaces_its_own_section_only(tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Results\n\nBERT section\n")
    bench_decoders.replace_section(results, "first run")
    bench_decoders.replace_section(results, "second run")
    text = results.read_text()
    assert text.startswith("# Results\n\nBERT section\n")
    assert text.count(bench_decoders.SECTION_BEGIN) == 1 and "second run" in text and "first run" not in text


def test_bf16_generation_records_token_agreement(data_folder, monkeypatch):
    """--dtypes bf16 (on the CPU here, as on a GPU): the fp32 same-work check passes first, then both
    sides are cast to bf16 weights, generate the same number of tokens, and the row reports how often
    their tokens agree instead of asserting identity."""
    import torch

    monkeypatch.setenv("BENCH_DECODER_DATA", str(data_folder))
    scenario = dataclasses.replace(TINY["generate-t5-tiny"], dtype="bf16")
    sides, notes = bench_decoders.build_sides(scenario)
    checks = bench_decoders.check_same_work(scenario, sides)
    agreement = bench_decoders.bf16_generation(sides, scenario.steps, scenario.new_tokens)
    assert all(next(side.model.parameters()).dtype == torch.bfloat16 for side in sides)
    assert 0.0 <= agreement <= 1.0
    result = {
        **notes,
        **checks,
        "bf16_token_agreement": agreement,
        "ours_s": 0.5,
        "theirs_s": 1.0,
        "ratio_median": 2.0,
        "ratio_min": 1.5,
        "ratio_max": 2.5,
        "ratio_best": 2.0,
    }
    row = bench_decoders.format_row("generate-t5-tiny", scenario, result, "1.00 1.00 1.00")
    assert row.startswith("| generate-t5-tiny (cpu, bf16) |")
    assert f"bf16 tokens agree at {agreement:.1%} of positions" in row


def test_unknown_device_is_refused():
    result = subprocess.run(
        [sys.executable, bench_decoders.__file__, "--device", "tpu"], capture_output=True, text=True
    )
    assert result.returncode != 0 and "--device 'tpu'" in result.stderr
