"""hf_variants.distillation: a RoBERTa teacher with a byte-level BPE tokenizer teaches a BERT student
with a WordPiece tokenizer (both tiny, both tokenizers trained on real review sentences) on a
transfer set where only some sentences have labels. The teacher's logits are cached and reused,
the student trains through Trainer, the loss is the formula, and the student reloads through
the Auto classes and pipeline("text-classification"), with and without hf_variants."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.nn import functional as F
from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainingArguments, pipeline

from hf_variants import BertForSequenceClassification, RobertaForSequenceClassification
from hf_variants.data import load_named_dataset
from hf_variants.distillation import (
    IGNORE_INDEX,
    TEACHER_LOGITS,
    TEACHER_MASK,
    TRANSFER_INDEX,
    DistillationCollator,
    DistillationTrainer,
    cached_teacher_logits,
    check_same_labels,
    distillation_features,
    distillation_loss,
    teacher_fingerprint,
    token_distillation_loss,
)
from hf_variants.registry import SPECS
from hf_variants.tokenization import train_tokenizer
from tests.common.tiny_variants import tiny_config

LABELS = {0: "negative", 1: "positive"}
TEMPERATURE, ALPHA = 2.0, 0.7


def loss_by_hand(
    student: torch.Tensor, teacher: torch.Tensor, labels: torch.Tensor, temperature: float, alpha: float
) -> torch.Tensor:
    """The per-example formula written out, one example at a time, then the mean over every example."""
    losses = []
    for s, t, y in zip(student, teacher, labels.tolist()):
        p_teacher = torch.exp(t / temperature) / torch.exp(t / temperature).sum()
        p_student = torch.exp(s / temperature) / torch.exp(s / temperature).sum()
        kl = (p_teacher * (p_teacher.log() - p_student.log())).sum()
        loss = alpha * temperature**2 * kl
        if y != IGNORE_INDEX:
            loss = loss + (1 - alpha) * -(torch.exp(s[y]) / torch.exp(s).sum()).log()
        losses.append(loss)
    return torch.stack(losses).mean()


def test_loss_is_the_formula_on_labelled_and_unlabeled_examples():
    g = torch.Generator().manual_seed(0)
    student, teacher = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)
    labels = torch.tensor([0, IGNORE_INDEX, 2, IGNORE_INDEX, IGNORE_INDEX, 1])
    got = distillation_loss(student, teacher, labels, TEMPERATURE, ALPHA)
    torch.testing.assert_close(got, loss_by_hand(student, teacher, labels, TEMPERATURE, ALPHA))
    # All labelled: Hinton's batch-mean mix, as run_distillation.py computed it before.
    full = torch.tensor([0, 1, 2, 1, 0, 1])
    hinton = ALPHA * TEMPERATURE**2 * F.kl_div(
        F.log_softmax(student / TEMPERATURE, -1), F.softmax(teacher / TEMPERATURE, -1), reduction="batchmean"
    ) + (1 - ALPHA) * F.cross_entropy(student, full)
    torch.testing.assert_close(distillation_loss(student, teacher, full, TEMPERATURE, ALPHA), hinton)
    # None labelled (or labels=None): only the soft term.
    none = torch.full((6,), IGNORE_INDEX)
    soft = distillation_loss(student, teacher, none, TEMPERATURE, 1.0) * ALPHA
    torch.testing.assert_close(distillation_loss(student, teacher, none, TEMPERATURE, ALPHA), soft)
    torch.testing.assert_close(distillation_loss(student, teacher, None, TEMPERATURE, ALPHA), soft)
    # A student equal to its teacher has zero soft loss.
    torch.testing.assert_close(distillation_loss(teacher, teacher, none, TEMPERATURE, ALPHA), torch.tensor(0.0))


@pytest.mark.parametrize("bad, message", [
    (dict(teacher=torch.zeros(6, 2)), "differ"),
    (dict(labels=torch.zeros(5, dtype=torch.long)), "do not match"),
    (dict(temperature=0.0), "temperature"),
    (dict(alpha=1.5), "alpha"),
])  # fmt: skip
def test_bad_loss_inputs_are_value_errors(bad, message):
    arguments = dict(
        student=torch.zeros(6, 3),
        teacher=torch.zeros(6, 3),
        labels=torch.zeros(6, dtype=torch.long),
        temperature=TEMPERATURE,
        alpha=ALPHA,
    )
    arguments.update(bad)
    with pytest.raises(ValueError, match=message):
        distillation_loss(
            arguments["student"],
            arguments["teacher"],
            arguments["labels"],
            arguments["temperature"],
            arguments["alpha"],
        )


@pytest.fixture(scope="module")
def cross_family(tmp_path_factory):
    """A tiny RoBERTa teacher (BPE) and a tiny BERT student (WordPiece), each tokenizer trained on real
    rt-polarity train sentences; 48 transfer sentences, the first 16 labelled, the rest not."""
    train = load_named_dataset("hf_variants/rt_polarity")["train"]
    corpus = list(train["sentence"][:400])
    teacher_tokenizer = train_tokenizer("bpe", corpus, vocab_size=300)
    student_tokenizer = train_tokenizer("wordpiece-uncased", corpus, vocab_size=250)
    specials = {name: getattr(teacher_tokenizer, f"{name}_id") for name in ("pad_token", "bos_token", "eos_token")}
    torch.manual_seed(0)
    teacher = RobertaForSequenceClassification(
        tiny_config(
            SPECS["hfv_roberta"],
            vocab_size=len(teacher_tokenizer),
            num_labels=2,
            id2label=LABELS,
            label2id={v: k for k, v in LABELS.items()},
            max_position_embeddings=80,
            **{f"{k}_id": v for k, v in specials.items()},
        )
    ).eval()
    student = BertForSequenceClassification(
        tiny_config(
            SPECS["hfv_bert"],
            vocab_size=len(student_tokenizer),
            num_labels=2,
            id2label=LABELS,
            label2id={v: k for k, v in LABELS.items()},
            pad_token_id=student_tokenizer.pad_token_id,
        )
    )
    texts = list(train["sentence"][400:448])
    labels = [label if row < 16 else -1 for row, label in enumerate(train["label"][400:448])]
    return dict(
        teacher=teacher,
        teacher_tokenizer=teacher_tokenizer,
        student=student,
        student_tokenizer=student_tokenizer,
        texts=texts,
        labels=labels,
        root=tmp_path_factory.mktemp("distillation"),
    )


def test_the_two_tokenizers_really_differ(cross_family):
    sentence = cross_family["texts"][0]
    teacher_ids = cross_family["teacher_tokenizer"](sentence)["input_ids"]
    student_ids = cross_family["student_tokenizer"](sentence)["input_ids"]
    assert cross_family["teacher_tokenizer"].convert_ids_to_tokens(teacher_ids) != cross_family[
        "student_tokenizer"
    ].convert_ids_to_tokens(student_ids)


def test_teacher_logits_are_computed_once_then_reused(cross_family):
    teacher, tokenizer, texts = cross_family["teacher"], cross_family["teacher_tokenizer"], cross_family["texts"]
    cache = cross_family["root"] / "teacher_logits"
    first = cached_teacher_logits(teacher, tokenizer, texts, cache, max_length=64, batch_size=16)
    assert first.computed and first.logits.shape == (48, 2) and first.path.parent == cache
    assert json.loads(first.path.with_suffix(".json").read_text())["num_texts"] == 48
    # Batched by length, padded: each row is still that text's own logits, read alone without padding.
    with torch.no_grad():
        alone = torch.cat(
            [
                teacher(**tokenizer(text, max_length=64, truncation=True, return_tensors="pt")).logits
                for text in texts[:8]
            ]
        )
    np.testing.assert_allclose(first.logits[:8], alone.numpy(), atol=1e-5, rtol=0)

    calls = []
    hook = teacher.register_forward_hook(lambda module, args, output: calls.append(1))
    try:
        second = cached_teacher_logits(teacher, tokenizer, texts, cache, max_length=64, batch_size=16)
    finally:
        hook.remove()
    assert not second.computed and calls == [] and second.path == first.path
    assert isinstance(second.logits, np.memmap)
    np.testing.assert_array_equal(second.logits, first.logits)

    # Other texts, or another teacher, are other files: never a stale cache.
    assert cached_teacher_logits(teacher, tokenizer, texts[:-1], cache, max_length=64).path != first.path
    copy = type(teacher)(teacher.config)
    copy.load_state_dict(teacher.state_dict())
    assert teacher_fingerprint(copy, tokenizer, 64) == teacher_fingerprint(teacher, tokenizer, 64)
    with torch.no_grad():
        copy.classifier.out_proj.bias.add_(1e-3)  # one weight changed: another teacher
    assert teacher_fingerprint(copy, tokenizer, 64) != teacher_fingerprint(teacher, tokenizer, 64)
    assert teacher_fingerprint(teacher, tokenizer, 32) != teacher_fingerprint(teacher, tokenizer, 64)
    with pytest.raises(ValueError, match="empty"):
        cached_teacher_logits(teacher, tokenizer, [], cache, max_length=64)


def test_student_of_another_family_trains_and_the_loss_is_the_formula(cross_family):
    teacher, student, tokenizer = cross_family["teacher"], cross_family["student"], cross_family["student_tokenizer"]
    check_same_labels(teacher.config, student.config)
    cached = cached_teacher_logits(
        teacher,
        cross_family["teacher_tokenizer"],
        cross_family["texts"],
        cross_family["root"] / "teacher_logits",
        max_length=64,
    )
    features = distillation_features(cross_family["texts"], cross_family["labels"], tokenizer, max_length=64)
    assert features["labels"][:16] == cross_family["labels"][:16] and set(features["labels"][16:]) == {IGNORE_INDEX}
    collator = DistillationCollator(tokenizer, cached.logits)
    args = TrainingArguments(
        str(cross_family["root"] / "student"),
        max_steps=4,
        per_device_train_batch_size=12,
        learning_rate=1e-3,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = DistillationTrainer(
        model=student,
        args=args,
        train_dataset=features,
        data_collator=collator,
        processing_class=tokenizer,
        temperature=TEMPERATURE,
        alpha=ALPHA,
    )

    # One batch with labelled and unlabeled rows: the trainer's loss is the formula by hand.
    rows = [features[i] for i in (0, 1, 20, 30, 40)]
    batch = collator([dict(row) for row in rows])
    np.testing.assert_array_equal(batch[TEACHER_LOGITS].numpy(), cached.logits[[0, 1, 20, 30, 40]])
    labels = batch["labels"].clone()
    assert (labels[:2] >= 0).all() and (labels[2:] == IGNORE_INDEX).all()
    student.eval()  # no dropout: the two forwards below see the same network
    with torch.no_grad():
        got = trainer.compute_loss(student, dict(batch))
        inputs = {k: v for k, v in batch.items() if k not in ("labels", TEACHER_LOGITS)}
        expected = loss_by_hand(student(**inputs).logits, batch[TEACHER_LOGITS], labels, TEMPERATURE, ALPHA)
    torch.testing.assert_close(got, expected)
    student.train()

    before = {k: v.clone() for k, v in student.state_dict().items()}
    trainer.train()
    losses = [entry["train_loss"] for entry in trainer.state.log_history if "train_loss" in entry]
    assert trainer.state.global_step == 4 and losses and np.isfinite(losses[-1])
    changed = [k for k, v in student.state_dict().items() if not torch.equal(v, before[k])]
    assert any("classifier" in k for k in changed) and any("embeddings" in k for k in changed)

    # Reload: Auto classes and the text-classification pipeline give the trained student's outputs.
    out = cross_family["root"] / "student-final"
    trainer.save_model(str(out))
    reloaded = AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert type(reloaded) is BertForSequenceClassification
    sentence = "A gripping, beautifully acted film."
    encoded = AutoTokenizer.from_pretrained(out)(sentence, return_tensors="pt")
    with torch.no_grad():
        probabilities = trainer.model.eval()(**encoded.to(trainer.model.device)).logits.softmax(-1)[0].cpu()
        torch.testing.assert_close(reloaded(**encoded).logits.softmax(-1)[0], probabilities)
    prediction = pipeline("text-classification", model=str(out), device="cpu")(sentence)[0]
    best = int(probabilities.argmax())
    assert prediction["label"] == LABELS[best] and prediction["score"] == pytest.approx(
        float(probabilities[best]), abs=1e-5
    )
    cross_family["saved"] = (out, sentence, LABELS[best], float(probabilities[best]))


PIPELINE_WITHOUT_HF_VARIANTS = r"""
import importlib.abc, json, sys
class BlockHfVariants(importlib.abc.MetaPathFinder):  # the saved folder's own code must suffice
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "hf_variants":
            raise ImportError("hf_variants must not be needed")
sys.meta_path.insert(0, BlockHfVariants())
from transformers import pipeline
classify = pipeline("text-classification", model=sys.argv[1], trust_remote_code=True, device="cpu")
result = classify(sys.argv[2])[0]
result["model_class"] = type(classify.model).__module__
result["hf_variants_imported"] = any(m.split(".")[0] == "hf_variants" for m in sys.modules)
print(json.dumps(result))
"""


def test_distilled_student_runs_in_a_pipeline_without_hf_variants(cross_family):
    if "saved" not in cross_family:
        pytest.skip("needs the trained student of the previous test")
    out, sentence, label, score = cross_family["saved"]
    env = {**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    completed = subprocess.run(
        [sys.executable, "-c", PIPELINE_WITHOUT_HF_VARIANTS, str(out), sentence],
        env=env,
        cwd=out,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["model_class"].startswith("transformers_modules.") and not result["hf_variants_imported"]
    assert result["label"] == label and result["score"] == pytest.approx(score, abs=1e-5)


def test_mismatched_labels_and_missing_teacher_logits_are_value_errors(cross_family):
    other = tiny_config(SPECS["hfv_bert"], num_labels=2, id2label={0: "positive", 1: "negative"})
    with pytest.raises(ValueError, match="differ from the teacher's"):
        check_same_labels(cross_family["teacher"].config, other)
    tokenizer = cross_family["student_tokenizer"]
    features = distillation_features(cross_family["texts"][:2], None, tokenizer, max_length=64)
    assert features["labels"] == [IGNORE_INDEX, IGNORE_INDEX] and features[TRANSFER_INDEX] == [0, 1]
    with pytest.raises(ValueError, match="no teacher logits"):
        DistillationCollator(tokenizer, None)([dict(features[0])])
    with pytest.raises(ValueError, match="2 labels for 1 texts"):
        distillation_features(cross_family["texts"][:1], [0, 1], tokenizer, max_length=64)


# ------------------------------------------------------------------------ token classification


def test_token_loss_is_the_per_word_formula():
    g = torch.Generator().manual_seed(1)
    student, teacher = torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    # Row 0: words at 1 (teacher + label), 2 (teacher only), 4 (label only: teacher truncated it);
    # row 1: word at 1 (teacher only). Positions 0, 3 of row 0 and the rest of row 1 are not words.
    mask = torch.tensor([[False, True, True, False, False], [False, True, False, False, False]])
    labels = torch.full((2, 5), IGNORE_INDEX)
    labels[0, 1], labels[0, 4] = 3, 0
    got = token_distillation_loss(student, teacher, mask, labels, TEMPERATURE, ALPHA)
    words = [(0, 1), (0, 2), (0, 4), (1, 1)]
    expected = []
    for row, position in words:
        s, t = student[row, position], teacher[row, position]
        term = torch.tensor(0.0)
        if mask[row, position]:
            p_t, p_s = F.softmax(t / TEMPERATURE, -1), F.softmax(s / TEMPERATURE, -1)
            term = term + ALPHA * TEMPERATURE**2 * (p_t * (p_t.log() - p_s.log())).sum()
        if labels[row, position] != IGNORE_INDEX:
            term = term + (1 - ALPHA) * F.cross_entropy(s[None], labels[row, position][None])
        expected.append(term)
    torch.testing.assert_close(got, torch.stack(expected).mean())
    # No labels at all: the KL over the teacher's words only.
    kl_only = token_distillation_loss(student, teacher, mask, None, TEMPERATURE, ALPHA)
    flat = distillation_loss(student[mask], teacher[mask], None, TEMPERATURE, ALPHA)
    torch.testing.assert_close(kl_only, flat)
    with pytest.raises(ValueError, match="batch, length"):
        token_distillation_loss(student, teacher, mask[:, :3], labels, TEMPERATURE, ALPHA)


def test_token_student_of_another_family_learns_word_by_word(tmp_path):
    """A BERT tagger (cased WordPiece) teaches an ALBERT tagger (Unigram) on real WSJ sentences
    whose words the two tokenizers split differently: each student word's first sub-token gets the
    teacher's logits of that same word."""
    from hf_variants import AlbertForTokenClassification, BertForTokenClassification
    from hf_variants.data import load_wsj_pos
    from hf_variants.distillation import (
        TokenDistillationCollator,
        compute_teacher_word_logits,
        token_distillation_features,
    )

    wsj = load_wsj_pos()["train"]
    tags = wsj.features["pos_tags"].feature.names
    corpus = [" ".join(words) for words in wsj["tokens"][:400]]
    teacher_tokenizer = train_tokenizer("wordpiece-cased", corpus, vocab_size=400)
    student_tokenizer = train_tokenizer("unigram", corpus, vocab_size=400)
    id2label = dict(enumerate(tags))
    teacher = BertForTokenClassification(
        tiny_config(
            SPECS["hfv_bert"],
            vocab_size=len(teacher_tokenizer),
            num_labels=len(tags),
            id2label=id2label,
            label2id={v: k for k, v in id2label.items()},
            pad_token_id=teacher_tokenizer.pad_token_id,
        )
    ).eval()
    student = AlbertForTokenClassification(
        tiny_config(
            SPECS["hfv_albert"],
            vocab_size=len(student_tokenizer),
            num_labels=len(tags),
            id2label=id2label,
            label2id={v: k for k, v in id2label.items()},
            pad_token_id=student_tokenizer.pad_token_id,
        )
    )
    words = [list(w) for w in wsj["tokens"][400:424]]
    word_labels = [list(t) if row < 8 else None for row, t in enumerate(wsj["pos_tags"][400:424])]
    max_length = 48  # shorter than some sentences: the teacher's truncation cuts words off
    word_logits = compute_teacher_word_logits(teacher, teacher_tokenizer, words, max_length, batch_size=8)
    assert word_logits.shape == (sum(map(len, words)), len(tags))
    assert np.isnan(word_logits).any(1).sum() > 0  # words past the teacher's 48 tokens: no soft target
    cache = tmp_path / "teacher_logits"
    first = cached_teacher_logits(teacher, teacher_tokenizer, words, cache, max_length, per_word=True)
    second = cached_teacher_logits(teacher, teacher_tokenizer, words, cache, max_length, per_word=True)
    assert first.computed and not second.computed and second.path.name.startswith("words-")
    np.testing.assert_allclose(second.logits, word_logits, atol=1e-5, rtol=0)  # other batches: float rounding only
    with pytest.raises(ValueError, match="list of words"):
        cached_teacher_logits(
            teacher, teacher_tokenizer, [" ".join(w) for w in words], cache, max_length, per_word=True
        )

    # Sentence 0, alone: the cached row of word w is the teacher's logits at w's first sub-token.
    encoded = teacher_tokenizer(
        words[0], is_split_into_words=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    with torch.no_grad():
        alone = teacher(**encoded).logits[0]
    firsts = {}
    for position, word in enumerate(encoded.word_ids()):
        if word is not None:
            firsts.setdefault(word, position)
    for word, position in firsts.items():
        np.testing.assert_allclose(word_logits[word], alone[position].numpy(), atol=1e-5, rtol=0)

    features = token_distillation_features(words, word_labels, student_tokenizer, max_length)
    student_ids = student_tokenizer(words[0], is_split_into_words=True)
    assert len(student_ids["input_ids"]) != len(encoded["input_ids"][0])  # the tokenizers split the words differently
    collator = TokenDistillationCollator(student_tokenizer, word_logits)
    batch = collator([dict(features[i]) for i in (0, 9, 10)])  # one labelled, two unlabeled sentences
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])])
    row_words = [0, 9, 10]
    for row, text in enumerate(row_words):
        seen = set()
        for position, word in enumerate(
            student_tokenizer(words[text], is_split_into_words=True, truncation=True, max_length=max_length).word_ids()
        ):
            first = word is not None and word not in seen
            seen.add(word)
            cached = word_logits[offsets[text] + word] if first else None
            has = first and not np.isnan(cached).any()
            assert bool(batch[TEACHER_MASK][row, position]) == has
            if has:
                np.testing.assert_array_equal(batch[TEACHER_LOGITS][row, position].numpy(), cached)
            expected_label = wsj["pos_tags"][400 + text][word] if first and text < 8 else IGNORE_INDEX
            assert int(batch["labels"][row, position]) == expected_label

    args = TrainingArguments(
        str(tmp_path / "student"),
        max_steps=3,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = DistillationTrainer(
        model=student,
        args=args,
        train_dataset=features,
        data_collator=collator,
        processing_class=student_tokenizer,
        temperature=TEMPERATURE,
        alpha=ALPHA,
    )
    student.eval()
    with torch.no_grad():
        got = trainer.compute_loss(student, dict(batch))
        inputs = {k: v for k, v in batch.items() if k not in ("labels", TEACHER_LOGITS, TEACHER_MASK)}
        expected = token_distillation_loss(
            student(**inputs).logits, batch[TEACHER_LOGITS], batch[TEACHER_MASK], batch["labels"], TEMPERATURE, ALPHA
        )
    torch.testing.assert_close(got, expected)
    student.train()
    before = student.classifier.weight.detach().clone()
    trainer.train()
    assert trainer.state.global_step == 3 and not torch.equal(student.classifier.weight, before)
