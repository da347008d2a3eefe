"""The GPU check's proof and step modes (issue #47), run end to end on the CPU at tiny sizes
(``DEVICE=cpu``: the same script, stages and report as on the GPU), and their pieces that need no run.

The two end-to-end tests start several Python processes each (the probe, the pretraining, the
fine-tuning harness; one worker per precision): minutes on a loaded 2-core machine, so they are
marked slow. They parse the report's JSON and its markdown tables, not grep them for a word.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from benchmarks import gpu_check_report, gpu_proof, gpu_step, make_gpu_shard

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_pretraining_check.sh"
TINY = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64}


def synthetic_corpus() -> datasets.DatasetDict:
    texts = [
        f"Review {i}. The film was good and the actors were fine, said critic {i}.\n\n"
        f"A second paragraph about movies, plot and music, number {i % 7}."
        for i in range(200)
    ]
    return datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": texts, "source": ["a"] * len(texts)}),
            "validation": datasets.Dataset.from_dict({"text": texts[:10], "source": ["a"] * 10}),
        }
    )


@pytest.fixture(scope="module")
def tiny_shard(tmp_path_factory) -> Path:
    """A shard of the real layout (tokenizers trained on a synthetic corpus, the real rt-polarity file)."""
    folder = tmp_path_factory.mktemp("gpu_shard")
    make_gpu_shard.make_shard(
        folder, 1.0, corpus=synthetic_corpus(), tokenizer_cache=folder.parent / "tokenizer_cache", check_carry=False
    )
    corpus = json.loads((folder / "bench" / "corpus.json").read_text())  # fewer sentences: faster workers
    corpus = {"features": corpus["features"][:400], "labels": corpus["labels"][:400]}
    (folder / "bench" / "corpus.json").write_text(json.dumps(corpus))
    return folder


def run_check(shard: Path, out: Path, **settings: str) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "DEVICE": "cpu",
        "SHARD": str(shard),
        "PYTHON": sys.executable,
        "TOTAL_SECONDS": "1500",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
        **settings,
    }
    return subprocess.run(
        ["bash", str(SCRIPT), str(out)], env=environment, capture_output=True, text=True, timeout=1400
    )


def table_after(markdown: str, header: str) -> list[list[str]]:
    """The cells of the rows of the markdown table whose header line is ``header``'s first line."""
    lines = markdown.splitlines()
    start = lines.index(header.splitlines()[0]) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


# ----------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_the_proof_mode_pretrains_probes_and_compares_both_arms_on_the_cpu(tiny_shard, tmp_path):
    out = tmp_path / "out"
    done = run_check(
        tiny_shard,
        out,
        MODE="proof",
        PROOF_OVERRIDES=",".join(f"{key}={value}" for key, value in TINY.items()),
        PROOF_MINUTES="0.05",
        PROBE_BATCHES="2,4",
        PROBE_SECONDS="0.2",
        PROOF_EVAL_STEPS="5",
        PROOF_EXTRA_SECONDS="400",
        SEEDS="2",
        EVAL_ARGS="--quick",
        EVAL_SECONDS="600",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(path.name for path in out.iterdir()) == ["check.log", "gpu_check.json", "gpu_check.md"]  # no weights
    report = json.loads((out / "gpu_check.json").read_text())
    assert [stage["stage"] for stage in report["stages"]] == ["batch_probe", "proof_pretraining", "fine_tuning"]
    assert all(stage["rc"] == 0 for stage in report["stages"])
    probe = report["proof"]["probe"]
    assert [row["batch_size"] for row in probe["rows"]] == [2, 4] and all(
        row["tokens_per_s"] > 0 for row in probe["rows"]
    )
    assert probe["choice"]["batch_size"] == max(probe["rows"], key=lambda row: row["tokens_per_s"])["batch_size"]
    run = report["proof"]["pretraining"]
    assert run["objective"] == "mlm" and run["bf16"] and run["global_step"] >= 1
    assert run["per_device_train_batch_size"] == probe["choice"]["batch_size"]
    # Real tokens: the tiny documents leave rows shorter than the row length.
    assert (
        0 < run["tokens_seen"] <= run["global_step"] * run["per_device_train_batch_size"] * run["sequence_lengths"][0]
    )
    sentiment = report["proof"]["sentiment"]
    pretrained, random = sentiment["arms"]["pretrained"]["test"], sentiment["arms"]["random"]["test"]
    assert len(pretrained["scores"]) == len(random["scores"]) == 2
    assert sentiment["difference"] == pytest.approx(pretrained["mean"] - random["mean"])
    assert sentiment["larger_std"] == pytest.approx(max(pretrained["std"], random["std"]))
    # The markdown table holds both arms with the JSON's numbers.
    text = (out / "gpu_check.md").read_text()
    rows = table_after(text, gpu_check_report.PROOF_TABLE_HEADER)
    assert [row[0].split(" ")[0] for row in rows] == ["pretrained", "random"]
    for row, arm in zip(rows, (pretrained, random)):
        mean, _, rest = row[1].partition(" ± ")
        assert float(mean) == pytest.approx(arm["mean"], abs=0.005)
        assert float(rest.split(" ")[0]) == pytest.approx(arm["std"], abs=0.005)
        assert [float(value) for value in row[3].split(", ")] == pytest.approx(arm["scores"], abs=0.005)
    assert f"**{sentiment['difference']:+.2f}** points" in text and sentiment["verdict"] in text


@pytest.mark.slow
def test_the_step_mode_measures_three_sides_and_names_a_failed_stage_on_the_cpu(tiny_shard, tmp_path):
    out = tmp_path / "out"
    done = run_check(
        tiny_shard,
        out,
        MODE="step",
        STEP_VARIANTS="bert,nosuch",  # the second stage fails: the report must say so
        STEP_DTYPES="fp32",
        STEP_SHAPES="4x32,2x32",
        STEP_ARGS=f"--steps 1 --reps 2 --warmup 1 --threads 1 --overrides {json.dumps(TINY, separators=(',', ':'))}",
        STEP_SECONDS="600",
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    stages = {stage["stage"]: stage["rc"] for stage in report["stages"]}
    assert stages == {"step_bert": 0, "step_nosuch": 1}
    (table,) = report["step"]
    (record,) = table["rows"]
    row = record["row"]
    assert (row["batch_size"], row["length"]) == (4, 32)  # the first shape that fits
    assert row["losses"]["ours_plain"] == pytest.approx(row["losses"]["transformers"], rel=1e-3)
    assert row["speed_path_engaged"] and row["flops_per_step"] > 0
    text = (out / "gpu_check.md").read_text()
    rows = table_after(text, gpu_check_report.STEP_TABLE_HEADER)
    assert [cells[4] for cells in rows] == [gpu_check_report.SIDE_NAMES[side] for side in gpu_step.SIDES]
    for cells, side in zip(rows, gpu_step.SIDES):
        assert cells[:4] == ["bert", "bert-base (overridden)", "fp32", "4 × 32"]
        assert float(cells[5].replace(",", "")) == pytest.approx(row["sides"][side]["tokens_per_s"], abs=0.5)
    speed = row["speed_vs_transformers"]
    assert rows[2][10].startswith(f"{speed['ratio_median']:.2f}×") and rows[2][11] == "yes"
    assert "step_nosuch exit 1 in" in text


# ----------------------------------------------------------------------------- pieces
def test_the_probe_chooses_the_fastest_batch_and_a_schedule_that_fills_the_budget():
    rows = [
        {"batch_size": 128, "length": 128, "tokens_per_s": 500_000.0},
        {"batch_size": 256, "length": 128, "tokens_per_s": 800_000.0},
        {"batch_size": 512, "length": 128, "error": "out of memory"},
    ]
    choice = gpu_proof.choose(rows, minutes=2.5, efficiency=0.8)
    assert choice["batch_size"] == 256
    assert choice["steps"] == int(800_000 * 0.8 * 150 / (256 * 128))  # 2,929 steps of 32,768 tokens
    with pytest.raises(ValueError, match="no batch size could be measured"):
        gpu_proof.choose(rows[2:], 2.5, 0.8)
    assert gpu_proof.is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not gpu_proof.is_out_of_memory(RuntimeError("shape mismatch"))


def test_the_step_mode_reads_shapes_and_the_peaks_of_the_gpus_it_knows():
    assert gpu_step.parse_shapes("128x512, 64X512") == ((128, 512), (64, 512))
    for bad in ("128", "0x512", "ax512", "64x"):
        with pytest.raises(ValueError, match="expected BxT"):
            gpu_step.parse_shapes(bad)
    assert gpu_step.peak_tflops("NVIDIA H100 80GB HBM3", "bf16", False) == (989.4, "H100 bf16")
    assert gpu_step.peak_tflops("NVIDIA H100 PCIe", "fp32", False) == (51.2, "H100 PCIe fp32")
    assert gpu_step.peak_tflops("NVIDIA H200", "fp32", True) == (494.7, "H200 tf32")
    assert gpu_step.peak_tflops("NVIDIA A100-SXM4-80GB", "bf16", False) == (None, None)
    assert gpu_step.peak_tflops(None, "bf16", False) == (None, None)


def test_the_speed_path_switch_reaches_every_model_module_for_another_device():
    # In a fresh process: the switch is process-wide (the GPU worker's own), so this one stays as it was.
    code = (
        "import sys, torch; sys.path.insert(0, '.');"
        "from benchmarks.gpu_step import extend_speed_path_to; from hf_variants.modules import fast_path;"
        "original = fast_path.fast_path_enabled; changed = extend_speed_path_to('meta');"
        "config = type('C', (), {'padding_free': True})(); off = type('C', (), {'padding_free': False})();"
        "left = [m.__name__ for m in list(sys.modules.values()) if getattr(m, 'fast_path_enabled', None) is original];"
        "print(changed, left, fast_path.fast_path_enabled(config, torch.device('meta')),"
        " fast_path.fast_path_enabled(off, torch.device('meta')), extend_speed_path_to('cpu'))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    changed, rest = done.stdout.split(" ", 1)
    assert int(changed) >= 5  # fast_path itself and the model files that import the name (bert, electra, gpt, ...)
    assert rest.strip() == "[] True False 0"


def sentiment_evaluation(pretrained: list[float], random: list[float]) -> dict:
    def runs(scores):
        return {str(42 + i): {"validation": s + 1, "test": s, "wall_s": 10.0} for i, s in enumerate(scores)}

    return {
        "seeds": [42, 43, 44],
        "device": "cuda",
        "quick": False,
        "tasks": {
            "sentiment": {
                "schedule": {"learning_rate": 5e-4},
                "metric": "accuracy %",
                "baselines": {"majority_class": 50.4},
                "runs": {"pretrained": runs(pretrained), "random": runs(random)},
            }
        },
    }


def test_the_sentiment_verdict_compares_the_difference_with_the_larger_std():
    ahead = gpu_check_report.sentiment_summary(sentiment_evaluation([75.0, 76.0, 77.0], [72.0, 72.5, 73.0]))
    assert ahead["difference"] == pytest.approx(3.5) and ahead["larger_std"] == pytest.approx(1.0)
    assert ahead["verdict"] == "ahead beyond the larger std"
    within = gpu_check_report.sentiment_summary(sentiment_evaluation([72.0, 73.0, 74.0], [72.0, 72.2, 72.4]))
    assert within["verdict"] == "within the larger std (not ahead)"
    behind = gpu_check_report.sentiment_summary(sentiment_evaluation([70.0, 70.1, 70.2], [72.0, 72.1, 72.2]))
    assert behind["verdict"] == "behind beyond the larger std"
    assert gpu_check_report.sentiment_summary(None) is None


def test_a_proof_whose_fine_tuning_timed_out_is_reported_as_failed(tmp_path):
    environment = tmp_path / "environment.json"
    environment.write_text(json.dumps(gpu_check_report.environment("cpu")))
    stages = tmp_path / "stages.jsonl"
    stages.write_text(
        '{"stage": "batch_probe", "rc": 0, "seconds": 20, "limit_s": 90}\n'
        '{"stage": "proof_pretraining", "rc": 0, "seconds": 230, "limit_s": 240}\n'
        '{"stage": "fine_tuning", "rc": 124, "seconds": 180, "limit_s": 180}\n'
    )
    out = tmp_path / "out"
    status = gpu_check_report.main(
        ["--environment", str(environment), "--modes", "proof,step", "--stages", str(stages), "--out", str(out)]
        + ["--probe", str(tmp_path / "none.json"), "--evaluation", str(tmp_path / "none.json")]
    )
    assert status == 1
    text = (out / "gpu_check.md").read_text()
    assert "**Batch probe: no results**" in text and "**Pretraining: no results**" in text
    assert "**Fine-tuning: no results**" in text and "fine_tuning exit 124 (timed out) in 180 s" in text
    assert "**The step mode left no results**" in text
    skipped = {"stage": "fine_tuning", "rc": 126, "seconds": 0, "limit_s": 0, "reason": "no checkpoint"}
    assert gpu_check_report._stage_text(skipped) == "fine_tuning skipped (no checkpoint)"
    assert "Minutes per stage: batch_probe 0.3, proof_pretraining 3.8, fine_tuning 3.0 (exit 124)." in text
    result = json.loads((out / "gpu_check.json").read_text())
    assert gpu_check_report.missing_results(result) == [
        "proof: pretraining",
        "proof: sentiment of both arms",
        "step: any measured row",
    ]


def test_the_step_table_names_shapes_out_of_memory_and_failed_workers():
    measured = {"tokens_per_s": 1000.0, "ms_per_step": 50.0, "tflops_per_s": 400.0, "mfu": 0.404, "memory": None}
    ratio = {"ratio_median": 1.25, "ratio_min": 1.2, "ratio_max": 1.3}
    records = [
        {
            "setting": {"variant": "bert", "dtype": "bf16", "overrides": {}},
            "tried": [{"batch_size": 128, "length": 512, "error": "out of memory"}, {"batch_size": 64, "length": 512}],
            "row": {
                "named": "bert-base",
                "batch_size": 64,
                "length": 512,
                "speed_path_engaged": True,
                "sides": {side: measured for side in gpu_step.SIDES},
                "plain_vs_transformers": ratio,
                "speed_vs_transformers": ratio,
            },
            "error": None,
        },
        {
            "setting": {"variant": "electra", "dtype": "fp32"},
            "tried": [],
            "row": None,
            "error": "worker failed:\nKeyError: 'x'",
        },
    ]
    rows, notes = gpu_check_report.step_rows(records)
    assert len(rows) == 3 and "| 64 × 512 |" in rows[0] and "| 40.4% |" in rows[1] and "1.25× (1.20–1.30)" in rows[2]
    assert notes == ["bert bf16: 128×512 out of memory", "electra fp32: **failed** (KeyError: 'x')"]


def test_the_shard_must_fit_what_a_device_call_carries():
    make_gpu_shard.check_carry_size(40.0, 6.0)
    with pytest.raises(ValueError, match=r"the shard \(60.0 MiB\) and the checkout \(6.0 MiB\) exceed the 64 MiB"):
        make_gpu_shard.check_carry_size(60.0, 6.0)


def test_the_carried_rt_polarity_splits_are_checked_against_the_ones_that_load():
    from hf_variants.data import load_rt_polarity

    loaded = load_rt_polarity()
    expected = {split: {"rows": len(part), "first_sentence": part[0]["sentence"]} for split, part in loaded.items()}
    assert make_gpu_shard.rt_polarity_problems(expected) == []
    changed = {**expected, "test": {**expected["test"], "rows": 1}}
    (problem,) = make_gpu_shard.rt_polarity_problems(changed)
    assert problem.startswith("rt-polarity test: the shard recorded {'rows': 1")
