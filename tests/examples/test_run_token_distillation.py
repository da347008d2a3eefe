"""examples/run_token_distillation.py end to end on tiny configs: a BERT POS tagger (cased WordPiece)
teaches a random ALBERT tagger with its own Unigram tokenizer on real WSJ sentences (a few steps);
the teacher's per-word logits are cached and a second seed reuses them; the scores of both models
equal word accuracies computed by hand, sentence by sentence; the student reloads through the Auto
class with the teacher's labels; a NER run on real tweets reports seqeval's F1 for both; a data set
whose tags are not the teacher's is a ValueError. (The loss itself: tests/test_distillation.py.)"""

from __future__ import annotations

import json

import pytest
import torch
from test_examples_processing import common_args, load_script
from transformers import AutoModelForTokenClassification, AutoTokenizer

from hf_variants import BertForTokenClassification
from hf_variants.data import load_wnut16, load_wsj_pos
from hf_variants.registry import SPECS
from hf_variants.tokenization import train_tokenizer
from tests.common.tiny_variants import tiny_config

distillation = load_script("run_token_distillation")
STUDENT = "albert-mini"
STUDENT_SIZE = (
    "hidden_size=32,num_hidden_layers=2,num_attention_heads=2,intermediate_size=64,embedding_size=16,vocab_size=400"
)
MAX_LENGTH = 40  # shorter than some WSJ sentences: truncated words are scored as predicted "O"


def save_teacher(folder, tokenizer, tags: list[str]) -> str:
    id2label = dict(enumerate(tags))
    torch.manual_seed(0)
    BertForTokenClassification(
        tiny_config(
            SPECS["hfv_bert"],
            vocab_size=len(tokenizer),
            num_labels=len(tags),
            id2label=id2label,
            label2id={v: k for k, v in id2label.items()},
            pad_token_id=tokenizer.pad_token_id,
        )
    ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    root = tmp_path_factory.mktemp("token-distillation")
    corpus = [" ".join(words) for words in load_wsj_pos()["train"]["tokens"][:400]]
    teacher_tokenizer = train_tokenizer("wordpiece-cased", corpus, vocab_size=400)
    train_tokenizer("unigram", corpus, vocab_size=400).save_pretrained(root / "student-tokenizer")
    return root, teacher_tokenizer, str(root / "student-tokenizer")


def by_hand_accuracy(model, tokenizer, sentences, gold, tags) -> float:
    """Word accuracy with each sentence alone: the prediction at each word's first sub-token, "O"
    for words past the truncation."""
    model.eval()
    right = total = 0
    for words, word_tags in zip(sentences, gold):
        encoded = tokenizer(
            words, is_split_into_words=True, truncation=True, max_length=MAX_LENGTH, return_tensors="pt"
        )
        with torch.no_grad():
            best = model(**encoded).logits[0].argmax(-1).tolist()
        predicted, seen = ["O"] * len(words), set()
        for position, word in enumerate(encoded.word_ids()):
            if word is not None and word not in seen:
                seen.add(word)
                predicted[word] = tags[best[position]]
        right += sum(p == tags[t] for p, t in zip(predicted, word_tags))
        total += len(words)
    return right / total


def test_pos_student_of_another_family_distils_and_both_are_scored(tokenizers):
    root, teacher_tokenizer, student_tokenizer = tokenizers
    wsj = load_wsj_pos()
    tags = wsj["train"].features["pos_tags"].feature.names
    teacher = save_teacher(root / "pos-teacher", teacher_tokenizer, tags)
    runs = root / "runs"
    shared = ["--task_name", "pos", "--dataset_name", "hf_variants/wsj_pos", "--teacher_model_name_or_path", teacher,
              "--model_name_or_path", STUDENT, "--tokenizer_name", student_tokenizer, "--config_overrides", STUDENT_SIZE,
              "--max_train_samples", "32", "--max_eval_samples", "16", "--max_predict_samples", "12",
              "--max_seq_length", str(MAX_LENGTH), "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "5",
              "--max_steps", "3", "--alpha", "0.7", "--temperature", "2", "--do_train", "--do_eval", "--do_predict",
              "--save_strategy", "no"]  # fmt: skip
    first = distillation.main(shared + common_args(runs / "student-a"))
    assert first["teacher_logits_computed"] and first["transfer_samples"] == 32
    assert first["transfer_words"] == first["transfer_labelled_words"] == sum(map(len, wsj["train"]["tokens"][:32]))
    assert first["teacher_logits_file"].startswith(str(runs / "teacher_logits" / "words-"))
    assert first["settings"]["task_name"] == "pos" and first["settings"]["alpha"] == 0.7
    assert first["eval_speedup"] == pytest.approx(first["eval_teacher_seconds"] / first["eval_student_seconds"])
    assert first["test_samples"] == 12 and first["test_speedup"] > 0
    written = json.loads((runs / "student-a" / "distillation_results.json").read_text())
    assert written["test_accuracy"] == first["test_accuracy"]

    # The scores are word accuracies over every word, computed here sentence by sentence.
    student = AutoModelForTokenClassification.from_pretrained(runs / "student-a")
    assert student.config.model_type == "hfv_albert" and student.config.id2label == dict(enumerate(tags))
    teacher_model = AutoModelForTokenClassification.from_pretrained(teacher)
    for split, prefix, count in (("validation", "eval", 16), ("test", "test", 12)):
        sentences, gold = wsj[split]["tokens"][:count], wsj[split]["pos_tags"][:count]
        assert first[f"teacher_{prefix}_accuracy"] == pytest.approx(
            by_hand_accuracy(teacher_model, teacher_tokenizer, sentences, gold, tags)
        )
        assert first[f"{prefix}_accuracy"] == pytest.approx(
            by_hand_accuracy(student, AutoTokenizer.from_pretrained(runs / "student-a"), sentences, gold, tags)
        )

    second = distillation.main(shared + ["--seed", "7"] + common_args(runs / "student-b"))
    assert not second["teacher_logits_computed"] and second["teacher_logits_file"] == first["teacher_logits_file"]
    assert second["teacher_eval_accuracy"] == first["teacher_eval_accuracy"]


def test_ner_run_reports_entity_f1_for_student_and_teacher(tokenizers):
    root, teacher_tokenizer, student_tokenizer = tokenizers
    tags = load_wnut16()["train"].features["ner_tags"].feature.names
    teacher = save_teacher(root / "ner-teacher", teacher_tokenizer, tags)
    results = distillation.main(
        ["--task_name", "ner", "--dataset_name", "hf_variants/wnut16", "--teacher_model_name_or_path", teacher,
         "--model_name_or_path", STUDENT, "--tokenizer_name", student_tokenizer, "--config_overrides", STUDENT_SIZE,
         "--max_train_samples", "16", "--max_eval_samples", "16", "--max_seq_length", str(MAX_LENGTH),
         "--per_device_train_batch_size", "8", "--max_steps", "2", "--do_train", "--do_eval", "--save_strategy", "no"]
        + common_args(root / "ner-runs" / "student")
    )  # fmt: skip
    for name in ("precision", "recall", "f1", "accuracy"):
        assert 0.0 <= results[f"eval_{name}"] <= 1.0 and 0.0 <= results[f"teacher_eval_{name}"] <= 1.0


def test_a_label_space_not_the_teachers_is_a_value_error(tokenizers, tmp_path):
    root, teacher_tokenizer, student_tokenizer = tokenizers
    tags = load_wsj_pos()["train"].features["pos_tags"].feature.names
    teacher = save_teacher(tmp_path / "teacher", teacher_tokenizer, tags)
    base = ["--teacher_model_name_or_path", teacher, "--model_name_or_path", STUDENT, "--tokenizer_name",
            student_tokenizer, "--config_overrides", STUDENT_SIZE, "--max_train_samples", "8", "--do_train",
            "--max_steps", "1"] + common_args(tmp_path / "out")  # fmt: skip
    with pytest.raises(ValueError, match="label space must be shared"):  # POS tagger, tweets' entity tags
        distillation.main(["--task_name", "pos", "--dataset_name", "hf_variants/wnut16", "--label_column_name",
                           "ner_tags"] + base)  # fmt: skip
    with pytest.raises(ValueError, match="no B-/I- prefix"):  # an entity task with POS tags
        distillation.main(["--task_name", "ner", "--dataset_name", "hf_variants/wsj_pos", "--label_column_name",
                           "pos_tags"] + base)  # fmt: skip
    with pytest.raises(ValueError, match="--task_name"):
        distillation.main(["--task_name", "chunk", "--dataset_name", "hf_variants/wsj_pos"] + base)
