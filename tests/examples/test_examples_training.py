"""One short fine-tuning run per example script on real data subsets, with the real MiniLM
weights (a transformers BERT checkpoint, converted on load): the training loss falls and every
output transformers' examples write is there. Plus resuming from a checkpoint.

To stay within the test budget on 2 CPU cores the runs are a dozen steps over a few dozen
examples seen several times: the falling loss shows the whole pipeline (inputs, labels, loss,
optimiser) is wired correctly, not how well the model generalises (the README's measured
results do that)."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from safetensors import safe_open
from test_examples_processing import (
    MINILM,
    common_args,
    label_names_as_text,
    load_script,
    shuffled_rows,
    write_json_lines,
)

from hf_variants.data import load_named_dataset

pytestmark = pytest.mark.slow


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def logged_losses(output_dir: Path) -> list[float]:
    return [entry["loss"] for entry in read_json(output_dir / "trainer_state.json")["log_history"] if "loss" in entry]


def assert_loss_falls(output_dir: Path, window: int = 3) -> None:
    losses = logged_losses(output_dir)
    assert len(losses) >= 3 * window, losses
    first, last = sum(losses[:window]) / window, sum(losses[-window:]) / window
    assert last < 0.85 * first, f"loss did not fall: first {first:.3f}, last {last:.3f} ({losses})"


def assert_run_outputs(output_dir: Path, *metric_keys: str) -> dict:
    """The files transformers' examples write, our weights, and the card with the results."""
    for name in (
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "all_results.json",
        "train_results.json",
        "eval_results.json",
        "trainer_state.json",
        "README.md",
    ):
        assert (output_dir / name).is_file(), name
    config = read_json(output_dir / "config.json")
    assert config["model_type"] == "hfv_bert"  # the transformers checkpoint was converted
    with safe_open(output_dir / "model.safetensors", "pt") as weights:
        assert any(".attention.qkv." in key for key in weights.keys())  # our fused QKV layout
    results = read_json(output_dir / "all_results.json")
    assert results["world_size"] == 1
    card = (output_dir / "README.md").read_text(encoding="utf-8")
    for key in metric_keys:
        assert key in results, key
        assert key.removeprefix("eval_") in card
    return results


def minilm_args(output_dir: Path, epochs: int, batch: int) -> list[str]:
    return ["--model_name_or_path", MINILM, "--num_train_epochs", str(epochs), "--per_device_train_batch_size", str(batch),
            "--per_device_eval_batch_size", "32", "--logging_steps", "1", "--learning_rate", "2e-4",
            "--save_strategy", "no", "--seed", "0"] + common_args(output_dir)  # fmt: skip


def test_run_glue_on_movie_reviews(tmp_path):
    reviews = load_named_dataset("hf_variants/rt_polarity")
    names = reviews["train"].features["label"].names
    files = {
        split: write_json_lines(
            tmp_path / f"{split}.jsonl", label_names_as_text(shuffled_rows(reviews[split], count), "label", names)
        )
        for split, count in (("train", 32), ("validation", 40), ("test", 10))
    }
    output_dir = tmp_path / "out"
    load_script("run_glue").main(
        ["--train_file", files["train"], "--validation_file", files["validation"], "--test_file", files["test"],
         "--do_train", "--do_eval", "--do_predict", "--max_seq_length", "64"] + minilm_args(output_dir, epochs=6, batch=16)
    )  # fmt: skip
    assert_loss_falls(output_dir)
    results = assert_run_outputs(output_dir, "eval_accuracy", "eval_f1")
    assert results["eval_samples"] == 40
    config = read_json(output_dir / "config.json")
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    predictions = (output_dir / "predict_results.txt").read_text().splitlines()
    assert predictions[0] == "index\tprediction" and len(predictions) == 11
    assert {line.split("\t")[1] for line in predictions[1:]} <= {"negative", "positive"}
    # The test file carries its labels, so it is scored too: the accuracy of the written predictions.
    test_labels = [json.loads(line)["label"] for line in Path(files["test"]).read_text().splitlines()]
    right = sum(line.split("\t")[1] == label for line, label in zip(predictions[1:], test_labels))
    assert results["predict_accuracy"] == pytest.approx(right / 10) and results["predict_samples"] == 10


def test_run_ner_on_wnut16(tmp_path):
    output_dir = tmp_path / "out"
    load_script("run_ner").main(
        ["--dataset_name", "hf_variants/wnut16", "--do_train", "--do_eval", "--do_predict", "--max_train_samples", "32",
         "--max_eval_samples", "40", "--max_predict_samples", "20", "--max_seq_length", "64"]
        + minilm_args(output_dir, epochs=6, batch=16)
    )  # fmt: skip
    assert_loss_falls(output_dir)
    results = assert_run_outputs(output_dir, "eval_f1", "eval_precision", "eval_recall", "eval_accuracy")
    assert 0.0 <= results["eval_f1"] <= 1.0 and results["eval_accuracy"] > 0.5  # most tokens are O
    config = read_json(output_dir / "config.json")
    assert len(config["id2label"]) == 21 and config["id2label"]["0"] == "O"
    lines = (output_dir / "predictions.txt").read_text().splitlines()
    tweets = load_named_dataset("hf_variants/wnut16")["test"].select(range(20))
    assert [len(line.split(" ")) for line in lines] == [len(tokens) for tokens in tweets["tokens"]]


def test_run_qa_on_real_text_questions(tmp_path):
    qa = load_named_dataset("hf_variants/real_text_qa")
    train = write_json_lines(tmp_path / "train.jsonl", shuffled_rows(qa["train"], 10))
    validation_rows = shuffled_rows(qa["validation"], 12)
    validation = write_json_lines(tmp_path / "validation.jsonl", validation_rows)
    output_dir = tmp_path / "out"
    load_script("run_qa").main(
        ["--train_file", train, "--validation_file", validation, "--version_2_with_negative", "--do_train", "--do_eval",
         "--max_seq_length", "128", "--doc_stride", "32"] + minilm_args(output_dir, epochs=3, batch=8)
    )  # fmt: skip
    assert_loss_falls(output_dir)
    results = assert_run_outputs(output_dir, "eval_exact", "eval_f1", "eval_HasAns_exact", "eval_NoAns_exact")
    assert results["eval_samples"] == 12 and results["eval_total"] == 12
    predictions = read_json(output_dir / "predictions.json")
    assert set(predictions) == {row["id"] for row in validation_rows}
    assert set(read_json(output_dir / "null_odds.json")) == set(predictions)


def test_run_swag_on_next_sentence_choices(tmp_path):
    output_dir = tmp_path / "out"
    load_script("run_swag").main(
        ["--dataset_name", "hf_variants/next_sentence_choice", "--do_train", "--do_eval", "--max_train_samples", "12",
         "--max_eval_samples", "12", "--max_seq_length", "48"] + minilm_args(output_dir, epochs=4, batch=4)
    )  # fmt: skip
    assert_loss_falls(output_dir)
    assert_run_outputs(output_dir, "eval_accuracy")


def test_next_sentence_choices_are_built_from_real_consecutive_sentences():
    run_swag = load_script("run_swag")
    pairs = load_named_dataset("hf_variants/sentence_pairs")
    choices = run_swag.next_sentence_choices(pairs, seed=0)
    validation = choices["validation"]
    originals = {row["id"]: row for row in pairs["validation"] if row["label"] == 1}
    assert len(validation) == len(originals)
    for row in validation.select(range(50)):
        assert row["sent1"] == originals[row["id"]]["sentence1"]
        assert row[f"ending{row['label']}"] == originals[row["id"]]["sentence2"]  # the true next sentence
        assert len({row[f"ending{i}"] for i in range(4)}) == 4
    assert len(set(validation["label"])) == 4  # the right answer is not always in one slot


def test_resume_from_the_last_checkpoint(tmp_path):
    reviews = load_named_dataset("hf_variants/rt_polarity")
    names = reviews["train"].features["label"].names
    train = write_json_lines(
        tmp_path / "train.jsonl", label_names_as_text(shuffled_rows(reviews["train"], 64), "label", names)
    )
    output_dir = tmp_path / "out"
    base = ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", train, "--do_train",
            "--per_device_train_batch_size", "8", "--logging_steps", "1", "--save_steps", "2", "--seed", "0"] + common_args(output_dir)  # fmt: skip
    run_glue = load_script("run_glue")
    run_glue.main(base + ["--max_steps", "4"])
    first_losses = logged_losses(output_dir)
    assert (output_dir / "checkpoint-4").is_dir()
    run_glue.main(base + ["--max_steps", "6", "--resume_from_checkpoint", "last"])
    state = read_json(output_dir / "trainer_state.json")
    assert state["global_step"] == 6
    steps = [entry["step"] for entry in state["log_history"] if "loss" in entry]
    assert steps == [1, 2, 3, 4, 5, 6]  # continued from step 4, not restarted
    assert logged_losses(output_dir)[:4] == first_losses
    with pytest.raises(ValueError, match="is not a directory"):
        run_glue.main(base + ["--max_steps", "6", "--resume_from_checkpoint", str(tmp_path / "nowhere")])


def tiny_args(output_dir: Path) -> list[str]:
    return ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--max_steps", "2", "--per_device_train_batch_size", "8",
            "--max_seq_length", "64", "--save_strategy", "no", "--seed", "0"] + common_args(output_dir)  # fmt: skip


def test_mnli_scores_matched_and_mismatched_sets(tmp_path, monkeypatch):
    """GLUE MNLI comes from the Hub, which tests cannot reach: the same DatasetDict layout
    (validation_matched / validation_mismatched) is built from the real sentence pairs instead."""
    pairs = load_named_dataset("hf_variants/sentence_pairs")
    mnli_like = {
        "train": pairs["train"].select(range(32)),
        "validation_matched": pairs["validation"].select(range(20)),
        "validation_mismatched": pairs["test"].select(range(15)),
    }
    mnli_like = datasets.DatasetDict(
        {
            split: data.rename_columns({"sentence1": "premise", "sentence2": "hypothesis"})
            for split, data in mnli_like.items()
        }
    )
    run_glue = load_script("run_glue")
    requested = []
    monkeypatch.setattr(
        run_glue.support,
        "load_raw_datasets",
        lambda data_args, model_args: requested.append(data_args.dataset_name) or mnli_like,
    )
    output_dir = tmp_path / "out"
    results = run_glue.main(["--task_name", "mnli", "--do_train", "--do_eval"] + tiny_args(output_dir))
    assert requested == ["nyu-mll/glue"]
    assert {"eval_accuracy", "eval_accuracy_mm", "eval_loss_mm"} <= set(results)
    assert results["eval_samples"] == 20
    assert read_json(output_dir / "eval_results.json")["eval_accuracy_mm"] == results["eval_accuracy_mm"]


def test_float_labels_train_a_regression_head(tmp_path):
    reviews = load_named_dataset("hf_variants/rt_polarity", "fine")
    rows = [{"sentence": row["sentence"], "label": row["rating"]} for row in shuffled_rows(reviews["train"], 40)]
    train = write_json_lines(tmp_path / "train.jsonl", rows[:24])
    validation = write_json_lines(tmp_path / "validation.jsonl", rows[24:])
    output_dir = tmp_path / "out"
    results = load_script("run_glue").main(
        ["--train_file", train, "--validation_file", validation, "--do_train", "--do_eval", "--pad_to_max_length"]
        + tiny_args(output_dir)
    )
    assert {"eval_mse", "eval_pearson", "eval_spearmanr"} <= set(results)
    config = read_json(output_dir / "config.json")
    assert config["problem_type"] == "regression" and len(config["id2label"]) == 1


def test_qa_predicts_a_test_file_without_answers(tmp_path):
    qa = load_named_dataset("hf_variants/real_text_qa")
    train = write_json_lines(tmp_path / "train.jsonl", shuffled_rows(qa["train"], 8))
    test_rows = [
        {key: row[key] for key in ("id", "title", "context", "question")} for row in shuffled_rows(qa["test"], 6)
    ]
    test = write_json_lines(tmp_path / "test.jsonl", test_rows)
    output_dir = tmp_path / "out"
    results = load_script("run_qa").main(
        ["--train_file", train, "--test_file", test, "--version_2_with_negative", "--do_train", "--do_predict", "--doc_stride", "32",
         "--pad_to_max_length", "false"] + tiny_args(output_dir) + ["--max_seq_length", "128"]
    )  # fmt: skip
    assert results["predict_samples"] == 6 and "predict_f1" not in results  # no answers: nothing to score
    predictions = read_json(output_dir / "predict_predictions.json")
    assert set(predictions) == {row["id"] for row in test_rows}
    assert all(answer == "" or answer in row["context"] for row, answer in zip(test_rows, predictions.values()))
