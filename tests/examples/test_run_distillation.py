"""examples/run_distillation.py: the student keeps the chosen teacher layers; a short real run
(rt-polarity sentences) trains, evaluates both models and times them; a student of another family
with its own tokenizer learns from the teacher's cached logits on the movie-review transfer set,
and a second student reuses the cache. (The loss itself: tests/test_distillation.py.)"""

from __future__ import annotations

import json

import pytest
import torch
from test_examples_processing import MINILM, common_args, load_script
from transformers import AutoTokenizer

from hf_variants import BertForSequenceClassification, ElectraForSequenceClassification
from hf_variants.models.named_configs import named_config

distillation = load_script("run_distillation")


def test_evenly_spaced_layers_keep_first_and_last():
    assert distillation.evenly_spaced_layers(6, 2) == [0, 5]
    assert distillation.evenly_spaced_layers(12, 6) == [0, 2, 4, 7, 9, 11]
    assert distillation.evenly_spaced_layers(4, 1) == [3]
    with pytest.raises(ValueError, match="cannot keep 7 of 6"):
        distillation.evenly_spaced_layers(6, 7)


def test_student_starts_from_the_teachers_layers():
    config = named_config("bert-tiny")
    config.num_hidden_layers = 4
    torch.manual_seed(0)
    teacher = BertForSequenceClassification(config)
    student = distillation.keep_layers(teacher, 2)
    assert student.config.num_hidden_layers == 2 and teacher.config.num_hidden_layers == 4
    teacher_state, student_state = teacher.state_dict(), student.state_dict()
    for key, value in student_state.items():
        source = key.replace("layers.1.", "layers.3.")  # kept layers [0, 3]
        assert torch.equal(value, teacher_state[source]), key


def test_short_real_run_trains_evaluates_and_times_student_and_teacher(tmp_path):
    config = named_config("bert-tiny")
    config.num_labels = 2
    config.id2label, config.label2id = {0: "negative", 1: "positive"}, {"negative": 0, "positive": 1}
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(tmp_path / "teacher")
    AutoTokenizer.from_pretrained(MINILM).save_pretrained(tmp_path / "teacher")
    teacher = str(tmp_path / "teacher")
    results = distillation.main(
        ["--teacher_model_name_or_path", teacher, "--model_name_or_path", teacher, "--student_num_layers", "1",
         "--dataset_name", "hf_variants/rt_polarity", "--max_train_samples", "48", "--max_eval_samples", "32",
         "--do_train", "--do_eval", "--max_seq_length", "48", "--per_device_train_batch_size", "16", "--max_steps", "3",
         "--temperature", "2", "--alpha", "0.5", "--save_strategy", "no"] + common_args(tmp_path / "out")
    )  # fmt: skip
    assert results["student_layers"] == 1 and results["teacher_layers"] == 2
    assert results["student_parameters"] < results["teacher_parameters"]
    assert 0.0 <= results["eval_accuracy"] <= 1.0 and 0.0 <= results["teacher_eval_accuracy"] <= 1.0
    assert results["eval_speedup"] == pytest.approx(results["eval_teacher_seconds"] / results["eval_student_seconds"])
    written = json.loads((tmp_path / "out" / "distillation_results.json").read_text())
    assert written["eval_samples"] == 32
    student = BertForSequenceClassification.from_pretrained(tmp_path / "out")
    assert student.config.num_hidden_layers == 1


def test_bad_arguments_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="--alpha"):
        distillation.main(["--teacher_model_name_or_path", "x", "--model_name_or_path", "x", "--alpha", "2",
                           "--dataset_name", "hf_variants/rt_polarity", "--do_train"] + common_args(tmp_path))  # fmt: skip


def test_student_of_another_family_and_tokenizer_distils_on_the_transfer_set(tmp_path):
    """An ELECTRA teacher reading MiniLM's WordPiece vocabulary teaches a random spanbert student
    whose tokenizer is a byte-level BPE trained on real review sentences; the transfer set is the
    real movie-review one (labelled and unlabeled rows). A second student reuses the teacher's cache."""
    from hf_variants.registry import SPECS
    from hf_variants.tokenization import train_tokenizer
    from tests.common.tiny_variants import tiny_config

    labels = {0: "negative", 1: "positive"}
    teacher_dir, student_tokenizer_dir = tmp_path / "teacher", tmp_path / "student-tokenizer"
    minilm_tokenizer = AutoTokenizer.from_pretrained(MINILM)
    torch.manual_seed(0)
    ElectraForSequenceClassification(
        tiny_config(
            SPECS["hfv_electra"],
            vocab_size=len(minilm_tokenizer),
            num_labels=2,
            id2label=labels,
            label2id={v: k for k, v in labels.items()},
            pad_token_id=minilm_tokenizer.pad_token_id,
        )
    ).save_pretrained(teacher_dir)
    minilm_tokenizer.save_pretrained(teacher_dir)
    from hf_variants.data import load_named_dataset

    texts = load_named_dataset("hf_variants/rt_polarity")["train"]["sentence"][:300]
    train_tokenizer("bpe", texts, vocab_size=400).save_pretrained(student_tokenizer_dir)
    runs = tmp_path / "runs"
    shared = ["--teacher_model_name_or_path", str(teacher_dir), "--model_name_or_path", "spanbert-mini",
              "--tokenizer_name", str(student_tokenizer_dir), "--config_overrides",
              "hidden_size=32,num_hidden_layers=2,num_attention_heads=2,intermediate_size=64,vocab_size=400",
              "--transfer_dataset_name", "hf_variants/rt_transfer", "--dataset_name", "hf_variants/rt_polarity",
              "--max_train_samples", "64", "--max_eval_samples", "24", "--max_seq_length", "48",
              "--per_device_train_batch_size", "16", "--max_steps", "2", "--alpha", "0.8", "--temperature", "3",
              "--do_train", "--do_eval", "--do_predict", "--max_predict_samples", "16", "--save_strategy", "no"]  # fmt: skip
    first = distillation.main(shared + common_args(runs / "student-a"))
    assert first["teacher_logits_computed"] and first["transfer_samples"] == 64
    assert 0 < first["transfer_labelled_samples"] < 64  # the transfer set mixes labelled and unlabeled rows
    assert first["teacher_logits_file"].startswith(str(runs / "teacher_logits"))
    assert 0.0 <= first["eval_accuracy"] <= 1.0 and first["eval_speedup"] > 0
    assert first["test_samples"] == 16 and 0.0 <= first["teacher_test_accuracy"] <= 1.0 and first["test_speedup"] > 0
    second = distillation.main(shared + ["--seed", "7"] + common_args(runs / "student-b"))
    assert not second["teacher_logits_computed"] and second["teacher_logits_file"] == first["teacher_logits_file"]
    assert second["teacher_eval_accuracy"] == first["teacher_eval_accuracy"]
    from transformers import AutoModelForSequenceClassification

    student = AutoModelForSequenceClassification.from_pretrained(runs / "student-b")
    assert student.config.model_type == "hfv_spanbert" and student.config.id2label == labels
