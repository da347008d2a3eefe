"""What ``evaluate_pretraining.py`` needs beside the fine-tuning scripts: the random-weight twin of
a checkpoint, frozen-feature linear probes, the trivial baselines and mean ± std.

- **Random twin**: the checkpoint's own config and tokenizer, weights from the model class's own
  initialisation under ``torch.manual_seed(seed)``, saved as a checkpoint folder, so that the
  fine-tuning scripts load it exactly as they load the pretrained one (same class, same key
  names, same freshly initialised task head).
- **Probes**: the encoder is frozen (eval mode, no dropout); sentence features are the mean of the
  last hidden states over real tokens (and, reported beside it, the first real token's state);
  word features are the state at each word's first subword. A scikit-learn
  ``LogisticRegression`` on standardised features is fitted on the train split, its inverse
  regularisation ``C`` chosen on the validation split, and the test split is scored once.
- **Baselines**: the training set's majority class; per-word most frequent tag (words unseen in
  training get the overall most frequent tag); for cloze QA the empty answer.
"""

from __future__ import annotations

import logging
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel

import hf_variants
from hf_variants.conversion import load_pretrained
from hf_variants.metrics import seqeval_scores, squad_scores

logger = logging.getLogger("hf_variants.examples.evaluate_pretraining")

PROBE_C_GRID = (0.01, 0.1, 1.0, 10.0)  # inverse L2 strength, chosen on validation
PROBE_MAX_ITER = 500
FEATURE_BATCH = 64


# ---------------------------------------------------------------------------------- statistics


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1; 0.0 for a single value)."""
    if not values:
        raise ValueError("mean_std needs at least one value")
    return float(statistics.fmean(values)), float(statistics.stdev(values)) if len(values) > 1 else 0.0


# --------------------------------------------------------------------------------- random twin


def checkpoint_class(config: transformers.PretrainedConfig) -> type[PreTrainedModel]:
    """The class the checkpoint was saved from (``config.architectures[0]``): ours for an
    ``hfv_*`` model type, else transformers'; ``AutoModel``'s class when it is not recorded."""
    names = getattr(config, "architectures", None) or []
    home = hf_variants if config.model_type.startswith("hfv_") else transformers
    found = getattr(home, names[0], None) if names else None
    if isinstance(found, type) and issubclass(found, PreTrainedModel):
        return found
    return type(AutoModel.from_config(config))


def make_random_twin(
    checkpoint: str | Path, seed: int, folder: str | Path, tokenizer_source: str | Path | None = None
) -> Path:
    """Save the random-weight twin of ``checkpoint`` into ``folder`` and return it.

    Same config and tokenizer; every weight from the class's own ``_init_weights`` after
    ``torch.manual_seed(seed)`` (so twin ``seed`` is reproducible, and differs across seeds).
    """
    folder = Path(folder)
    config = AutoConfig.from_pretrained(checkpoint)
    model_class = checkpoint_class(config)
    torch.manual_seed(seed)
    model = model_class(config)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tokenizer_source or checkpoint).save_pretrained(folder)
    return folder


# ------------------------------------------------------------------------------------ features


def load_encoder(model_dir: str | Path, device: str = "cpu") -> torch.nn.Module:
    """The frozen encoder of a checkpoint (an encoder-decoder's encoder), in eval mode on ``device``."""
    level = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # the pretraining heads it drops are expected
    try:
        model = load_pretrained(str(model_dir), AutoModel)
    finally:
        transformers.utils.logging.set_verbosity(level)
    if getattr(model.config, "is_encoder_decoder", False):
        model = model.get_encoder()
    model.to(device).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model


def _batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Row indices grouped by similar length (less padding), in length order."""
    order = np.argsort(lengths, kind="stable")
    return [order[start : start + batch_size].tolist() for start in range(0, len(order), batch_size)]


@torch.inference_mode()
def sentence_features(
    encoder: torch.nn.Module, tokenizer, texts: Sequence[str], max_length: int
) -> dict[str, np.ndarray]:
    """``{"mean": (N, H), "first": (N, H)}``: the mean of the last hidden states over real tokens
    and the first real token's state (left-padding models pad before it)."""
    encoded = tokenizer(list(texts), truncation=True, max_length=max_length)
    hidden = encoder.config.hidden_size
    means, firsts = np.zeros((len(texts), hidden), np.float32), np.zeros((len(texts), hidden), np.float32)
    for rows in _batches([len(ids) for ids in encoded["input_ids"]], FEATURE_BATCH):
        batch = tokenizer.pad({key: [encoded[key][i] for i in rows] for key in encoded}, return_tensors="pt").to(
            encoder.device
        )
        states = encoder(**batch).last_hidden_state  # (B, T, H)
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)  # (B, T, 1)
        means[rows] = ((states * mask).sum(1) / mask.sum(1)).float().cpu().numpy()
        first_real = batch["attention_mask"].argmax(dim=1)  # (B,)
        firsts[rows] = states[torch.arange(len(rows), device=states.device), first_real].float().cpu().numpy()
    return {"mean": means, "first": firsts}


@torch.inference_mode()
def word_features(
    encoder: torch.nn.Module, tokenizer, sentences: Sequence[Sequence[str]], max_length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Features (W, H) of every word that has a token (its first subword's last hidden state),
    and a mask (total words,) saying which words have one (cut off by ``max_length``, or made of
    characters the tokenizer drops: no feature)."""
    encoded = tokenizer(
        [list(words) for words in sentences], is_split_into_words=True, truncation=True, max_length=max_length
    )
    offsets = np.cumsum([0] + [len(words) for words in sentences])
    firsts: dict[int, tuple[int, int]] = {}  # global word index -> (row, position)
    for row in range(len(sentences)):
        previous = None
        for position, word in enumerate(encoded.word_ids(row)):
            if word is not None and word != previous:
                firsts[int(offsets[row]) + word] = (row, position)
            previous = word
    has_token = np.zeros(int(offsets[-1]), dtype=bool)
    has_token[list(firsts)] = True
    features = np.zeros((int(offsets[-1]), encoder.config.hidden_size), np.float32)
    by_row: dict[int, list[tuple[int, int]]] = {}
    for word, (row, position) in firsts.items():
        by_row.setdefault(row, []).append((word, position))
    for rows in _batches([len(ids) for ids in encoded["input_ids"]], FEATURE_BATCH):
        batch = tokenizer.pad({key: [encoded[key][i] for i in rows] for key in encoded}, return_tensors="pt").to(
            encoder.device
        )
        states = encoder(**batch).last_hidden_state.float().cpu().numpy()  # (B, T, H)
        for slot, row in enumerate(rows):
            for word, position in by_row.get(row, []):
                features[word] = states[slot, position]
    return features[has_token], has_token


# --------------------------------------------------------------------------------------- probes


def fit_probe(
    train_x: np.ndarray, train_y: np.ndarray, validation_x: np.ndarray, validation_y: np.ndarray, seed: int = 0
) -> tuple[object, float, float]:
    """Standardise + LogisticRegression, ``C`` from ``PROBE_C_GRID`` by validation accuracy.
    Returns (fitted pipeline, chosen C, validation accuracy)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    best = None
    for c in PROBE_C_GRID:
        probe = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=PROBE_MAX_ITER, random_state=seed))
        probe.fit(train_x, train_y)
        score = float((probe.predict(validation_x) == validation_y).mean())
        if best is None or score > best[2]:
            best = (probe, c, score)
    return best


def sentiment_probe(model_dir: str | Path, tokenizer, splits: dict, max_length: int, device: str = "cpu") -> dict:
    """Sentence-level probe on the frozen encoder: accuracy (%) on validation (used to choose C)
    and test, for mean-pooled (the headline) and first-token features."""
    encoder = load_encoder(model_dir, device)
    features = {name: sentence_features(encoder, tokenizer, splits[name]["sentence"], max_length) for name in splits}
    labels = {name: np.asarray(splits[name]["label"]) for name in splits}
    scores: dict = {}
    for pooling in ("mean", "first"):
        probe, c, validation = fit_probe(
            features["train"][pooling], labels["train"], features["validation"][pooling], labels["validation"]
        )
        test = float((probe.predict(features["test"][pooling]) == labels["test"]).mean())
        suffix = "" if pooling == "mean" else "_first_token"
        scores.update({f"validation{suffix}": 100 * validation, f"test{suffix}": 100 * test, f"C{suffix}": c})
    return scores


def pos_probe(model_dir: str | Path, tokenizer, splits: dict, max_length: int, device: str = "cpu") -> dict:
    """Per-word probe: each word's first-subword state -> its tag. Accuracy (%) over every word
    of the split; a word without a token (truncated) counts as wrong."""
    encoder = load_encoder(model_dir, device)
    data = {}
    for name in splits:
        features, has_token = word_features(encoder, tokenizer, splits[name]["tokens"], max_length)
        tags = np.asarray([tag for row in splits[name]["pos_tags"] for tag in row])
        data[name] = (features, tags[has_token], len(tags))
    (train_x, train_y, _), (validation_x, validation_y, _) = data["train"], data["validation"]
    probe, c, _ = fit_probe(train_x, train_y, validation_x, validation_y)
    scores = {"C": c}
    for name in ("validation", "test"):
        x, y, total = data[name]
        scores[name] = 100 * float((probe.predict(x) == y).sum()) / total
    return scores


# ------------------------------------------------------------------------------------ baselines


def majority_baseline(train_labels: Sequence[int], test_labels: Sequence[int]) -> float:
    """Accuracy (%) of always answering the training set's most frequent class."""
    majority = Counter(train_labels).most_common(1)[0][0]
    return 100 * float(np.mean(np.asarray(test_labels) == majority))


def most_frequent_tags(
    train_words: Sequence[Sequence[str]], train_tags: Sequence[Sequence[str]], words: Sequence[Sequence[str]]
) -> list[list[str]]:
    """Each word's most frequent training tag (ties: the tag seen first); unseen words get the
    training set's most frequent tag overall."""
    per_word: dict[str, Counter] = {}
    overall = Counter()
    for sentence, tags in zip(train_words, train_tags):
        for word, tag in zip(sentence, tags):
            per_word.setdefault(word, Counter())[tag] += 1
            overall[tag] += 1
    fallback = overall.most_common(1)[0][0]
    best = {word: counts.most_common(1)[0][0] for word, counts in per_word.items()}
    return [[best.get(word, fallback) for word in sentence] for sentence in words]


def tagging_baselines(task: str, splits: dict, tag_column: str) -> dict:
    """Per-word most frequent tag on test (POS: accuracy %, NER: entity F1 %); NER also all-'O'."""
    names = splits["train"].features[tag_column].feature.names
    as_tags = {name: [[names[t] for t in row] for row in splits[name][tag_column]] for name in ("train", "test")}
    predicted = most_frequent_tags(splits["train"]["tokens"], as_tags["train"], splits["test"]["tokens"])
    if task == "pos":
        flat_true = [t for row in as_tags["test"] for t in row]
        flat_predicted = [t for row in predicted for t in row]
        return {"most_frequent_tag": 100 * float(np.mean(np.asarray(flat_true) == np.asarray(flat_predicted)))}
    all_outside = [["O"] * len(row) for row in as_tags["test"]]
    return {
        "most_frequent_tag": 100 * seqeval_scores(as_tags["test"], predicted)["overall_f1"],
        "all_O": 100 * seqeval_scores(as_tags["test"], all_outside)["overall_f1"],
    }


def no_answer_baseline(test_split) -> dict:
    """SQuAD v2 F1 (%) of answering "" to every question of the test split."""
    predictions = [{"id": row["id"], "prediction_text": ""} for row in test_split]
    references = [{"id": row["id"], "answers": row["answers"]} for row in test_split]
    return {"empty_answer": squad_scores(predictions, references, version_2_with_negative=True)["f1"]}
