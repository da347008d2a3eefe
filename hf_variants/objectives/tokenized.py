"""Tokenize a corpus once, pack it once, reuse it everywhere: the cached data path of pretraining.

Three caches, each a folder under a cache root named by a digest of what determines its content,
built in a temporary folder and renamed into place (a crash leaves no half-written entry; two
processes racing on one entry both end with the same content):

- `cached_tokenizer`: the tokenizer trained on a corpus, keyed by (corpus content, kind, vocabulary
  size). Training is the slow, non-deterministic step (`tokenizers` breaks ties in a per-process
  order), so every later run and objective reuses the same vocabulary.
- `tokenize_corpus` -> `TokenizedCorpus`: every document as its sentences' token ids, in three
  memory-mapped numpy arrays (tokens, segment ends, document ends), keyed by (corpus content,
  tokenizer). Sentence splitting and tokenization happen here and nowhere else.
- `packed_dataset`: the model rows of one input format and length (`packing.py`'s formats and
  `pairs.py`'s NSP/SOP pairs, built from the cached token ids) as an Arrow file that
  `datasets.Dataset.from_file` memory-maps, keyed by (corpus, tokenizer, format, max_length, pair
  settings). `cached_rows` does the same for an objective's own row builder (TLM, T5).

Corpora are identified by their content (`corpus_fingerprint`: a digest of the `document` and
`text` columns), not by a datasets fingerprint, which changes with how the Dataset was loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np

from .packing import INPUT_FORMATS, iter_corpus_documents, pack_doc_sentences, pack_full_sentences, tokenize_documents

CACHE_VERSION = 1  # bump when a cached layout or the packing code's output changes
ROW_FEATURES = {
    "input_ids": "int32",
    "token_type_ids": "int8",
    "special_tokens_mask": "int8",
    "next_sentence_label": "int64",
    "sentence_order_label": "int64",
}


def digest(*parts) -> str:
    """A short hex digest of JSON-serialisable `parts`."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def corpus_fingerprint(corpus: datasets.Dataset, batch_size: int = 10_000) -> str:
    """A digest of the corpus content (`document` and `text` columns, in order); about 1 s per 10 M words."""
    hasher = hashlib.sha256()
    for batch in corpus.select_columns(["document", "text"]).iter(batch_size=batch_size):
        hasher.update(np.asarray(batch["document"], dtype=np.int64).tobytes())
        hasher.update("\x00".join(batch["text"]).encode())
        hasher.update(b"\x01")
    return hasher.hexdigest()[:20]


def tokenizer_fingerprint(tokenizer) -> str:
    """A digest of everything that decides the token ids: the fast tokenizer's full JSON
    (normalizer, pre-tokenizer, model and vocabulary, post-processor) and its special tokens."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer: the token cache needs one")
    return digest(type(tokenizer).__name__, backend.to_str(), sorted(tokenizer.special_tokens_map.items()))


def _publish(build: Callable[[Path], None], target: Path) -> Path:
    """Run `build(folder)` in a temporary folder beside `target`, then rename it to `target`
    (if another process published it first, ours is discarded)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        build(staging)
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / "done").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def cached_tokenizer(
    train: Callable[[], object],
    corpus_digest: str,
    kind: str,
    vocab_size: int,
    cache_root: Path | str,
    model_max_length: int | None = None,
):
    """The tokenizer `train()` builds, trained once per (corpus content, kind, vocabulary size) and
    loaded from `cache_root/tokenizer-<digest>` afterwards."""
    from transformers import AutoTokenizer

    target = Path(cache_root) / f"tokenizer-{digest(CACHE_VERSION, corpus_digest, kind, vocab_size)}"
    if not (target / "done").is_file():

        def build(folder: Path) -> None:
            train().save_pretrained(folder)
            (folder / "done").write_text(json.dumps({"corpus": corpus_digest, "kind": kind, "vocab_size": vocab_size}))

        _publish(build, target)
    tokenizer = AutoTokenizer.from_pretrained(target)
    if model_max_length is not None:
        tokenizer.model_max_length = model_max_length
    return tokenizer


@dataclass(frozen=True)
class TokenizedCorpus:
    """A corpus as token ids, memory-mapped.

    Attributes:
        tokens: (total_tokens,) int32: every segment's ids, back to back, no special tokens.
        segment_ends: (segments,) int64: the end of each segment (a sentence) in `tokens`.
        document_ends: (documents,) int64: the end of each document in `segment_ends`.
        folder: where the arrays live.
    """

    tokens: np.ndarray
    segment_ends: np.ndarray
    document_ends: np.ndarray
    folder: Path

    def __len__(self) -> int:
        return len(self.document_ends)

    def document(self, index: int) -> list[list[int]]:
        """Document `index` as a list of segments (lists of token ids)."""
        first = int(self.document_ends[index - 1]) if index else 0
        ends = self.segment_ends[first : int(self.document_ends[index])]
        start = int(self.segment_ends[first - 1]) if first else 0
        tokens = self.tokens[start : int(ends[-1])].tolist()
        cuts = (ends - start).tolist()
        return [tokens[a:b] for a, b in zip([0] + cuts[:-1], cuts)]

    def documents(self) -> Iterator[list[list[int]]]:
        """Every document in order (see `document`)."""
        return (self.document(index) for index in range(len(self)))


class _LazyDocuments(Sequence):
    """The documents of a TokenizedCorpus as a read-only sequence, built one at a time on access
    (NSP draws its random next segments from any document: no need to hold them all as lists)."""

    def __init__(self, corpus: TokenizedCorpus):
        self.corpus = corpus

    def __len__(self) -> int:
        return len(self.corpus)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.corpus.document(i) for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self.corpus.document(index % len(self))


def _load_tokenized(folder: Path) -> TokenizedCorpus:
    arrays = {
        name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ("tokens", "segment_ends", "document_ends")
    }
    return TokenizedCorpus(folder=folder, **arrays)


def tokenize_corpus(
    corpus: datasets.Dataset, tokenizer, cache_root: Path | str, corpus_digest: str | None = None
) -> TokenizedCorpus:
    """The corpus (`load_corpus` rows: `document`, `text`) split into sentences and tokenized once,
    cached under `cache_root/tokens-<digest>` by (corpus content, tokenizer)."""
    corpus_digest = corpus_digest or corpus_fingerprint(corpus)
    key = digest(CACHE_VERSION, corpus_digest, tokenizer_fingerprint(tokenizer))
    target = Path(cache_root) / f"tokens-{key}"
    if (target / "done").is_file():
        return _load_tokenized(target)

    def build(folder: Path) -> None:
        segment_lengths: list[int] = []
        document_sizes: list[int] = []
        with open(folder / "tokens.bin", "wb") as stream:
            for document in tokenize_documents(iter_corpus_documents(corpus), tokenizer):
                for segment in document:
                    np.asarray(segment, dtype=np.int32).tofile(stream)
                segment_lengths.extend(len(segment) for segment in document)
                document_sizes.append(len(document))
        if not document_sizes:
            raise ValueError("the corpus has no text to tokenize")
        tokens = np.fromfile(folder / "tokens.bin", dtype=np.int32)
        np.save(folder / "tokens.npy", tokens)
        (folder / "tokens.bin").unlink()
        np.save(folder / "segment_ends.npy", np.cumsum(segment_lengths, dtype=np.int64))
        np.save(folder / "document_ends.npy", np.cumsum(document_sizes, dtype=np.int64))
        (folder / "done").write_text(
            json.dumps(
                {
                    "corpus": corpus_digest,
                    "tokens": int(tokens.size),
                    "segments": len(segment_lengths),
                    "documents": len(document_sizes),
                }
            )
        )

    return _load_tokenized(_publish(build, target))


def _write_rows(rows: Iterator[dict], path: Path) -> int:
    """Write `rows` (dicts of id lists and labels) to one Arrow file; returns the row count."""
    from datasets.arrow_writer import ArrowWriter

    count = 0
    writer, first = None, None
    for row in rows:
        if writer is None:
            first = row
            features = datasets.Features(
                {
                    name: (
                        datasets.Sequence(datasets.Value(ROW_FEATURES.get(name, "int64")))
                        if isinstance(value, list)
                        else datasets.Value(ROW_FEATURES.get(name, "int64"))
                    )
                    for name, value in first.items()
                }
            )
            writer = ArrowWriter(features=features, path=str(path))
        writer.write(row)
        count += 1
    if writer is None:
        return 0
    writer.finalize()
    writer.close()
    return count


def cached_rows(
    build_rows: Callable[[], Iterator[dict] | datasets.Dataset], key: str, cache_root: Path | str
) -> datasets.Dataset:
    """Rows built once by `build_rows()` (an iterator of dicts, or a Dataset) and memory-mapped
    from `cache_root/rows-<key>/rows.arrow` afterwards."""
    target = Path(cache_root) / f"rows-{key}"
    if not (target / "done").is_file():

        def build(folder: Path) -> None:
            rows = build_rows()
            if isinstance(rows, datasets.Dataset):
                rows.flatten_indices().save_to_disk(folder / "dataset")
                count = len(rows)
            else:
                count = _write_rows(rows, folder / "rows.arrow")
            if count == 0:
                raise ValueError("no examples could be built from the text")
            (folder / "done").write_text(json.dumps({"rows": count}))

        _publish(build, target)
    if (target / "dataset").is_dir():
        return datasets.load_from_disk(str(target / "dataset"))
    return datasets.Dataset.from_file(str(target / "rows.arrow"))


def paragraph_rows(documents: datasets.Dataset) -> datasets.Dataset:
    """One row per document (a `text` column, paragraphs separated by blank lines, or by line
    breaks when there is no blank line) -> `load_corpus` rows: (`document`, `text`) per paragraph.
    A corpus that already has a `document` column is returned as it is."""
    if "document" in documents.column_names:
        return documents
    if "text" not in documents.column_names:
        raise ValueError(f"a corpus needs a 'text' column; the columns are {documents.column_names}")

    def split(batch: dict, indices: list[int]) -> dict:
        ids, paragraphs = [], []
        for index, text in zip(indices, batch["text"]):
            text = (text or "").strip()
            parts = text.split("\n\n") if "\n\n" in text else text.split("\n")
            for part in parts:
                part = " ".join(part.split())
                if part:
                    ids.append(index)
                    paragraphs.append(part)
        return {"document": ids, "text": paragraphs}

    return documents.map(
        split, batched=True, with_indices=True, remove_columns=documents.column_names, desc="paragraphs"
    )


def packed_dataset(
    tokenized: TokenizedCorpus,
    tokenizer,
    input_format: str,
    max_length: int,
    cache_root: Path | str,
    task: str | None = None,
    short_seq_prob: float = 0.1,
    seed: int = 0,
) -> datasets.Dataset:
    """`packing.pretraining_dataset`'s rows, built from cached token ids and cached themselves:
    `input_ids` (int32), `token_type_ids`, `special_tokens_mask` and, for pair formats,
    `next_sentence_label` / `sentence_order_label`; memory-mapped Arrow."""
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"unknown input_format {input_format!r}; expected one of {INPUT_FORMATS}")
    is_pair = input_format in ("segment-pair", "sentence-pair")
    task = task or ("nsp" if is_pair else None)
    if (task is not None) != is_pair or task not in (None, "nsp", "sop"):
        raise ValueError(f"task={task!r} does not go with input_format={input_format!r}")
    pair_settings = (task, short_seq_prob, seed) if is_pair else None  # the packing formats are deterministic

    def rows() -> Iterator[dict]:
        if input_format == "full-sentences":
            return pack_full_sentences(tokenized.documents(), tokenizer, max_length)
        if input_format == "doc-sentences":
            return pack_doc_sentences(tokenized.documents(), tokenizer, max_length)
        from .pairs import build_nsp_pairs, build_sop_pairs

        build = build_sop_pairs if task == "sop" else build_nsp_pairs
        return build(_LazyDocuments(tokenized), tokenizer, max_length, input_format, short_seq_prob, seed)

    key = digest(CACHE_VERSION, tokenized.folder.name, input_format, max_length, pair_settings)
    return cached_rows(rows, key, cache_root)
