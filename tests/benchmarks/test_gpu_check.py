"""The GPU check's pieces that run without a GPU: the shard writer (make_gpu_shard.py) and the
environment check and report (gpu_check_report.py).

The shell script itself (benchmarks/gpu_pretraining_check.sh) takes minutes even on its CPU path;
fixtures/gpu_check_cpu.json is the gpu_check.json its CPU path wrote (DEVICE=cpu, bert-tiny, the
command in the script's header), rendered again here.
"""

import json
from pathlib import Path

import datasets
import pytest
import torch

from benchmarks import (
    gpu_check_report,
    make_gpu_shard,  # noqa: E402
)

FIXTURE = Path(__file__).parent / "fixtures" / "gpu_check_cpu.json"


def small_corpus() -> datasets.DatasetDict:
    texts = [f"Document {i}.\n\nIt has two paragraphs of plain words, number {i}." for i in range(10)]
    return datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": texts, "source": ["a"] * 6 + ["b"] * 4}),
            "validation": datasets.Dataset.from_dict({"text": ["Held out.\n\nA second paragraph."], "source": ["a"]}),
        }
    )


def test_the_shard_keeps_whole_leading_documents_under_the_cap(tmp_path):
    corpus = small_corpus()
    size = len(corpus["train"][0]["text"].encode())
    summary = make_gpu_shard.write_data(corpus, tmp_path, max_mib=3.5 * size / 2**20)
    saved = datasets.load_from_disk(str(tmp_path / "data"))
    assert saved["train"]["text"] == corpus["train"]["text"][:3]  # 3 whole documents fit in 3.5 of them
    assert saved["validation"]["text"] == corpus["validation"]["text"]  # the held-out split whole
    assert summary["train"] == {
        "documents": 3,
        "words": sum(len(t.split()) for t in corpus["train"]["text"][:3]),
        "bytes": 3 * size,
        "sources": {"a": 3},
    }
    assert make_gpu_shard.prefix_within(["x" * 100], 10) == 1  # a cap below one document still gives one
    assert make_gpu_shard.prefix_within(["ab", "cd"], 100) == 2


def test_the_shard_refuses_a_bad_cap_or_a_corpus_without_a_held_out_split(tmp_path):
    with pytest.raises(ValueError, match="size cap must be positive"):
        make_gpu_shard.prefix_within(["text"], 0)
    corpus = small_corpus()
    del corpus["validation"]
    with pytest.raises(ValueError, match="needs train and validation splits"):
        make_gpu_shard.write_data(corpus, tmp_path, 1.0)


def test_the_environment_check_names_what_is_missing():
    record = gpu_check_report.environment("cpu")
    assert record["versions"]["transformers"] and gpu_check_report.problems(record) == []
    old = {**record, "versions": {**record["versions"], "transformers": "5.17.0", "datasets": None}}
    found = gpu_check_report.problems(old)
    assert any("datasets is not installed" in problem for problem in found)
    assert any("transformers 5.17.0 is outside pyproject.toml's" in problem for problem in found)
    if not torch.cuda.is_available():
        (problem,) = gpu_check_report.problems(gpu_check_report.environment("cuda"))
        assert "DEVICE=cuda but torch" in problem and "sees no CUDA GPU" in problem


def test_the_report_of_the_cpu_path_names_the_machine_the_loss_and_both_steps():
    text = gpu_check_report.markdown(json.loads(FIXTURE.read_text()))
    assert text.startswith("### GPU check, ") and "CPU only" in text
    assert "| bert-tiny | mlm+nsp | bf16 | 32 × 128 | 16 | 59,373 |" in text
    assert "9.006 → **8.315**" in text and "| --max_time |" in text
    assert text.count("| bert | mlm+nsp | BertForPreTraining / BertForPreTraining |") == 2  # fp32 and bf16
    assert "Stages: pretraining exit 0 in 225 s; bench_bert exit 0 in 258 s." in text
    assert "Shard:" not in text  # that run's stage 0 was not given --shard
    report = json.loads(FIXTURE.read_text())
    report["environment"]["shard"] = {
        "train": {"documents": 3880, "words": 4055737, "bytes": 1},
        "validation": {"documents": 120, "words": 92689, "bytes": 1},
    }
    assert "Shard: 3,880 train documents (4,055,737 words)" in gpu_check_report.markdown(report)


def test_a_failed_check_is_reported_as_failed(tmp_path):
    environment = tmp_path / "environment.json"
    environment.write_text(json.dumps(gpu_check_report.environment("cpu")))
    stages = tmp_path / "stages.jsonl"
    stages.write_text('{"stage": "pretraining", "rc": 124, "seconds": 360, "limit_s": 360}\n')
    status = gpu_check_report.main(
        [
            "--environment",
            str(environment),
            "--run",
            str(tmp_path / "no_run"),
            "--stages",
            str(stages),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert status == 1
    text = (tmp_path / "out" / "gpu_check.md").read_text()
    assert "**Pretraining: no results**" in text and "pretraining exit 124 (timed out) in 360 s" in text
    assert "**The step benchmark left no results**" in text
    assert json.loads((tmp_path / "out" / "gpu_check.json").read_text())["pretraining"] is None
