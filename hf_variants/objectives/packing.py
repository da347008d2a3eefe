"""RoBERTa's input formats (Liu et al. 2019, section 4.2) as streaming dataset builders.

A *document* here is a list of segments, each a list of token ids without special tokens
(normally one natural sentence each; see `tokenize_documents`). Everything streams: documents
are read one at a time from the corpus and examples are yielded (or written to an Arrow file by
`pretraining_dataset`) as soon as they are full, so the corpus is never held twice in memory.

- FULL-SENTENCES (`pack_full_sentences`): contiguous sentences filling up to `max_length`,
  crossing document boundaries with a separator token between documents.
- DOC-SENTENCES (`pack_doc_sentences`): the same, but an example never crosses a document
  boundary (the last example of a document is shorter).
- SEGMENT-PAIR and SENTENCE-PAIR with NSP: see `pairs.py` (they need random access to other
  documents for the "random next" half).

No token is dropped: a sentence longer than an example's capacity is split into pieces of at
most that capacity (RoBERTa's fairseq blocks split such sentences too), and a sentence that
does not fit in what is left of the current example starts the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import datasets

from ..data.sentences import split_sentences
from .templates import SpecialTokenTemplate

Document = Sequence[Sequence[int]]


def iter_corpus_documents(corpus: datasets.Dataset, batch_size: int = 1000) -> Iterator[list[str]]:
    """Stream a `load_corpus`-style Dataset (columns `document`, `text`; one paragraph per row,
    a document's rows contiguous) as documents, each the list of its paragraphs."""
    missing = {"document", "text"} - set(corpus.column_names)
    if missing:
        raise ValueError(f"the corpus needs columns 'document' and 'text'; missing {sorted(missing)}")
    finished: set[int] = set()
    current_id, paragraphs = None, []
    for batch in corpus.iter(batch_size=batch_size):
        for document_id, text in zip(batch["document"], batch["text"]):
            if document_id != current_id:
                if current_id is not None:
                    finished.add(current_id)
                    yield paragraphs
                if document_id in finished:
                    raise ValueError(f"rows of document {document_id} are not contiguous in the corpus")
                current_id, paragraphs = document_id, []
            paragraphs.append(text)
    if paragraphs:
        yield paragraphs


def tokenize_documents(
    documents: Iterable[Sequence[str]], tokenizer, sentences: bool = True
) -> Iterator[list[list[int]]]:
    """Tokenize documents (lists of paragraphs) into lists of segments of token ids.

    With `sentences=True` each paragraph is split into sentences (`hf_variants.data.split_sentences`),
    as BERT's pretraining input had one sentence per line; otherwise a segment is a paragraph.
    Segments with no tokens (blank text) are left out; documents with no tokens are skipped.
    """
    for paragraphs in documents:
        texts = [s for p in paragraphs for s in (split_sentences(p) if sentences else [p])]
        texts = [t for t in texts if t.strip()]
        if not texts:
            continue
        encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
        segments = [ids for ids in encoded if ids]
        if segments:
            yield segments


def _pieces(segment: Sequence[int], capacity: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(segment), capacity):
        yield segment[start : start + capacity]


def _pack(
    documents: Iterable[Document], tokenizer, max_length: int, cross_documents: bool
) -> Iterator[dict[str, list[int]]]:
    template = SpecialTokenTemplate(tokenizer)
    capacity = max_length - template.single_specials
    if capacity < 2:
        raise ValueError(f"max_length={max_length} leaves no room for tokens after the special tokens")
    block: list[int] = []
    for document in documents:
        if block and cross_documents:
            if len(block) + 1 < capacity:
                block.append(template.separator_id)  # RoBERTa's document boundary marker
            else:
                yield template.build(block).as_dict()
                block = []
        for segment in document:
            for piece in _pieces(segment, capacity):
                if len(block) + len(piece) > capacity:
                    yield template.build(block).as_dict()
                    block = []
                block.extend(piece)
        if block and not cross_documents:
            yield template.build(block).as_dict()
            block = []
    if block:
        yield template.build(block).as_dict()


def pack_full_sentences(documents: Iterable[Document], tokenizer, max_length: int) -> Iterator[dict[str, list[int]]]:
    """FULL-SENTENCES: yield examples (`input_ids`, `token_type_ids`, `special_tokens_mask`) of at
    most `max_length` tokens, filled with contiguous sentences that may cross documents."""
    return _pack(documents, tokenizer, max_length, cross_documents=True)


def pack_doc_sentences(documents: Iterable[Document], tokenizer, max_length: int) -> Iterator[dict[str, list[int]]]:
    """DOC-SENTENCES: like `pack_full_sentences`, but every example comes from one document."""
    return _pack(documents, tokenizer, max_length, cross_documents=False)


INPUT_FORMATS = ("full-sentences", "doc-sentences", "segment-pair", "sentence-pair")


def _generate_examples(
    corpus: datasets.Dataset,
    tokenizer,
    input_format: str,
    max_length: int,
    task: str | None,
    short_seq_prob: float,
    seed: int,
) -> Iterator[dict]:
    documents = tokenize_documents(iter_corpus_documents(corpus), tokenizer)
    if input_format == "full-sentences":
        yield from pack_full_sentences(documents, tokenizer, max_length)
    elif input_format == "doc-sentences":
        yield from pack_doc_sentences(documents, tokenizer, max_length)
    else:
        from .pairs import build_nsp_pairs, build_sop_pairs

        build = build_sop_pairs if task == "sop" else build_nsp_pairs
        # Pairs need random access to other documents: keep the token ids (not the text) in memory.
        yield from build(list(documents), tokenizer, max_length, input_format, short_seq_prob, seed)


def pretraining_dataset(
    corpus: datasets.Dataset,
    tokenizer,
    input_format: str = "full-sentences",
    max_length: int = 512,
    task: str | None = None,
    short_seq_prob: float = 0.1,
    seed: int = 0,
) -> datasets.Dataset:
    """Build a pretraining Dataset from a raw corpus (`hf_variants.data.load_corpus` format).

    Args:
        corpus: rows of paragraphs, columns `document` and `text`.
        input_format: one of `INPUT_FORMATS` (RoBERTa's names, lower-cased and hyphenated).
        task: for the pair formats, "nsp" (default) or "sop"; must be None for the others.
        short_seq_prob / seed: pair construction (see `pairs.py`).

    Returns:
        A Dataset with `input_ids`, `token_type_ids`, `special_tokens_mask` (each at most
        `max_length` long) and, for pair formats, `next_sentence_label` or `sentence_order_label`.
        It is written to the datasets cache as it is generated.
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"unknown input_format {input_format!r}; expected one of {INPUT_FORMATS}")
    is_pair = input_format in ("segment-pair", "sentence-pair")
    if is_pair and task is None:
        task = "nsp"
    if (task is not None) != is_pair or task not in (None, "nsp", "sop"):
        raise ValueError(
            f"task={task!r} does not go with input_format={input_format!r}: pair formats take "
            "'nsp' or 'sop', the sentence-packing formats take none"
        )
    try:
        return datasets.Dataset.from_generator(
            _generate_examples,
            gen_kwargs={
                "corpus": corpus,
                "tokenizer": tokenizer,
                "input_format": input_format,
                "max_length": max_length,
                "task": task,
                "short_seq_prob": short_seq_prob,
                "seed": seed,
            },
        )
    except datasets.exceptions.DatasetGenerationError as error:
        if isinstance(error.__cause__, ValueError):  # surface our own message, not the builder's wrapper
            raise ValueError(str(error.__cause__)) from error
        raise
