"""examples/run_distillation.py: the loss is Hinton et al.'s mix, the student keeps the chosen
teacher layers, and a short real run (rt-polarity sentences) trains, evaluates both models and
times them."""

from __future__ import annotations

import json

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoTokenizer

from hf_variants import BertForSequenceClassification
from hf_variants.models.named_configs import named_config
from test_examples_processing import MINILM, common_args, load_script

distillation = load_script("run_distillation")


def test_loss_is_the_temperature_scaled_kl_plus_cross_entropy():
    g = torch.Generator().manual_seed(0)
    student, teacher = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)
    labels = torch.tensor([0, 2, 1, 1])
    temperature, alpha = 3.0, 0.7
    teacher_probs = F.softmax(teacher / temperature, -1)
    kl = (teacher_probs * (teacher_probs.log() - F.log_softmax(student / temperature, -1))).sum(-1).mean()
    expected = alpha * temperature**2 * kl + (1 - alpha) * F.cross_entropy(student, labels)
    got = distillation.distillation_loss(student, teacher, labels, temperature, alpha)
    torch.testing.assert_close(got, expected)
    # Matching the teacher exactly leaves only the hard term.
    same = distillation.distillation_loss(teacher, teacher, labels, temperature, alpha)
    torch.testing.assert_close(same, (1 - alpha) * F.cross_entropy(teacher, labels))
    with pytest.raises(ValueError, match="differ"):
        distillation.distillation_loss(student, teacher[:, :2], labels, temperature, alpha)


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
