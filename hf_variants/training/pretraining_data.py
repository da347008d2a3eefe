"""Text for run_pretraining.py: corpora (named, a BERT-format text file, a Hub or local dataset, a
parallel corpus), the held-out split by document, and the objective's rows built through the
tokenize-once cache (`hf_variants.objectives.tokenized`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import datasets
import numpy as np

import hf_variants.data
from hf_variants.data import cache_dir, load_corpus, load_django_translations
from hf_variants.data.data_files import read_utf8_text
from hf_variants.objectives import pretraining_dataset
from hf_variants.objectives.registry import OBJECTIVES, Objective
from hf_variants.objectives.tokenized import (
    cached_rows,
    corpus_fingerprint,
    digest,
    packed_dataset,
    paragraph_rows,
    tokenize_corpus,
    tokenizer_fingerprint,
)

# Parallel corpora (rows with a `translation` dict, the Hub's format) for the objectives that need one.
PARALLEL_CORPORA = {"django-en-fr": load_django_translations}


def read_text_file(path: str) -> datasets.Dataset:
    """BERT's pretraining text format -> rows (document, text). A missing or empty file, or a byte
    that is not UTF-8, is a ValueError naming the file (and line)."""
    try:
        text = read_utf8_text(path)
    except ValueError as error:
        raise ValueError(f"--train_file {error}") from None
    lines = text.splitlines()
    kept, documents = paragraph_documents(lines)
    return datasets.Dataset.from_dict({"document": documents, "text": [lines[index].strip() for index in kept]})


def paragraph_documents(paragraphs: Iterable[str | None]) -> tuple[list[int], list[int]]:
    """(indices of the non-blank paragraphs, the document id of each): one or more blank (or None)
    paragraphs close a document, as in BERT's pretraining text format and wikitext's rows."""
    kept, documents, document, blank_seen = [], [], 0, False
    for index, paragraph in enumerate(paragraphs):
        if not (paragraph or "").strip():
            blank_seen = bool(kept)
            continue
        if blank_seen:  # the first paragraph after blank ones opens a new document
            document, blank_seen = document + 1, False
        kept.append(index)
        documents.append(document)
    return kept, documents


def load_parallel_corpus(name: str) -> datasets.Dataset:
    """A parallel corpus with a `text` column added (both sides on one line, for training the tokenizer)."""
    pairs = PARALLEL_CORPORA[name]()
    return pairs.map(lambda row: {"text": "\n".join(row["translation"].values())})


def load_dataset_corpus(name: str, config_name: str | None, parallel: bool) -> datasets.Dataset:
    """The train split of a Hub dataset (or local dataset folder) as corpus rows.

    Parallel (tlm): rows with a `translation` dict, the same two languages in every row (the
    Hub's translation format: opus_books, wmt16, ...); each pair is its own document, and gets a
    `text` column (both sides) for training the tokenizer. Otherwise: a `text` column, one
    paragraph per row, an empty row closing a document (wikitext's layout)."""
    rows = datasets.load_dataset(name, config_name, split="train")
    column = "translation" if parallel else "text"
    if column not in rows.column_names:
        kind = "parallel rows (a `translation` dict per row) for tlm" if parallel else "a `text` column"
        raise ValueError(f"--dataset_name {name}: expected {kind}, the columns are {rows.column_names}")
    if parallel:
        languages = sorted(rows[0]["translation"])
        if len(languages) != 2:
            raise ValueError(
                f"--dataset_name {name}: row 0 translates between {languages}, tlm needs exactly two languages"
            )

        def pair_row(row: dict, index: int) -> dict:
            if sorted(row["translation"]) != languages or not all(row["translation"].values()):
                raise ValueError(
                    f"--dataset_name {name}: row {index} has {row['translation']!r}, expected {languages} texts"
                )
            return {"text": "\n".join(row["translation"].values()), "document": index}

        return rows.map(pair_row, with_indices=True)
    kept, documents = paragraph_documents(rows["text"])
    if not kept:
        raise ValueError(f"--dataset_name {name}: the train split has no text")
    return rows.select(kept).select_columns(["text"]).add_column("document", documents)


def load_text(args, minimum_documents: int, parallel: bool = False) -> tuple[datasets.Dataset, datasets.Dataset]:
    """The corpus split by document into (train, validation), each of >= `minimum_documents`.
    With `parallel`, the corpus must be one of PARALLEL_CORPORA or a dataset of translation rows."""
    # run_clm's arguments share this loader and have no --dataset_name.
    dataset_name = getattr(args, "dataset_name", None)
    sources = {"--corpus": args.corpus, "--train_file": args.train_file, "--dataset_name": dataset_name}
    if sum(source is not None for source in sources.values()) != 1:
        raise ValueError(f"give exactly one of {', '.join(name for name in sources if hasattr(args, name[2:]))}")
    if dataset_name is not None and not parallel and is_saved_dataset(dataset_name):
        corpus = datasets.load_from_disk(dataset_name)  # save_to_disk output: documents, maybe with its own split
        corpus = corpus if isinstance(corpus, datasets.DatasetDict) else paragraph_rows(corpus)
    elif dataset_name is not None:
        corpus = load_dataset_corpus(dataset_name, args.dataset_config_name, parallel)
    elif parallel != (args.corpus in PARALLEL_CORPORA):
        raise ValueError(
            f"--corpus {args.corpus or args.train_file!r}: the objectives {parallel_objectives()} need a "
            f"parallel corpus ({', '.join(PARALLEL_CORPORA)}, or --dataset_name with translation rows) "
            "and the others plain text"
        )
    elif parallel:
        corpus = load_parallel_corpus(args.corpus)
    else:
        corpus = (
            load_named_corpus(
                args.corpus, getattr(args, "corpus_sources", None), getattr(args, "corpus_upsample", None)
            )
            if args.corpus
            else read_text_file(args.train_file)
        )
    if isinstance(corpus, datasets.DatasetDict):  # a corpus with its own held-out split
        return split_corpus_dict(corpus, args.max_documents, args.corpus)
    document_ids = np.asarray(corpus["document"])
    unique = list(dict.fromkeys(document_ids.tolist()))
    if args.max_documents:
        unique = unique[: args.max_documents]
    if not 0 < args.validation_fraction < 1:
        raise ValueError(f"--validation_fraction must be in (0, 1), got {args.validation_fraction}")
    # NSP draws its random segments from other documents, so each side needs at least two.
    held_out = max(minimum_documents, round(len(unique) * args.validation_fraction))
    if len(unique) < held_out + minimum_documents:
        raise ValueError(
            f"need at least {held_out + minimum_documents} documents ({held_out} held out), the text has {len(unique)}"
        )
    train_rows = np.flatnonzero(np.isin(document_ids, unique[:-held_out]))
    validation_rows = np.flatnonzero(np.isin(document_ids, unique[-held_out:]))
    return corpus.select(train_rows), corpus.select(validation_rows)


def is_saved_dataset(path: str) -> bool:
    """Whether `path` is a folder written by `Dataset.save_to_disk` / `DatasetDict.save_to_disk`."""
    folder = Path(path)
    return (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file()


def load_named_corpus(
    name: str, sources: str | None = None, upsample: str | None = None
) -> datasets.Dataset | datasets.DatasetDict:
    """`load_corpus(name)`, or for "pretraining" the data layer's large pretraining corpus (a
    DatasetDict of documents with its own held-out split), where this version of it has one:
    `sources` ("a,b,c"; "+a" for the default sources and a) chooses its sources and `upsample`
    ("a=4,b=2") repeats their training documents."""
    if name != "pretraining":
        if sources or upsample:
            raise ValueError(
                f"--corpus_sources / --corpus_upsample choose parts of --corpus pretraining, not of {name!r}"
            )
        return load_corpus(name)
    loader = getattr(hf_variants.data, "load_pretraining_corpus", None)
    if loader is None:
        raise ValueError("--corpus pretraining: this hf_variants.data has no load_pretraining_corpus")
    chosen = [part.strip() for part in sources.lstrip("+").split(",") if part.strip()] if sources else None
    if sources and sources.startswith("+"):  # the default sources and these
        from hf_variants.data.pretraining_corpus import DEFAULT_SOURCES

        chosen = list(DEFAULT_SOURCES) + chosen
    return loader(sources=chosen, upsample=parse_upsample(upsample) if upsample else None)


def parse_upsample(text: str) -> dict[str, int]:
    """'movie_reviews=4,austen=3' -> {"movie_reviews": 4, "austen": 3}, or a ValueError naming the part."""
    factors: dict[str, int] = {}
    for part in (part.strip() for part in text.split(",")):
        name, _, factor = part.partition("=")
        if not name.strip() or not factor.strip().isdigit():
            raise ValueError(f"--corpus_upsample: expected source=k parts such as 'movie_reviews=4', got {part!r}")
        factors[name.strip()] = int(factor)
    return factors


def split_corpus_dict(
    corpus: datasets.DatasetDict, max_documents: int | None, name: str
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """(train, held-out) paragraph rows of a corpus that comes split: its "train" split and its
    "validation" split (else "test"); rows of whole documents become paragraph rows."""
    held_out = next((split for split in ("validation", "test") if split in corpus), None)
    if "train" not in corpus or held_out is None:
        raise ValueError(f"--corpus {name}: expected train and validation (or test) splits, got {list(corpus)}")
    train = corpus["train"]
    if max_documents:
        train = (
            train.select(range(min(max_documents, len(train))))
            if "document" not in train.column_names
            else train.filter(
                lambda ids: np.isin(ids, sorted(set(train["document"]))[:max_documents]),
                input_columns="document",
                batched=True,
            )
        )
    return paragraph_rows(train), paragraph_rows(corpus[held_out])


def parallel_objectives() -> tuple[str, ...]:
    """The registered objectives that read a parallel corpus (XLM's tlm)."""
    return tuple(name for name, objective in OBJECTIVES.items() if objective.parallel)


def data_cache_root(args) -> Path | None:
    """`--data_cache_dir` (default: the hf_variants cache's pretraining/ folder), None for 'none' or
    for scripts without the option."""
    chosen = getattr(args, "data_cache_dir", "none")
    if chosen is None:
        return cache_dir() / "pretraining"
    return None if chosen.lower() == "none" else Path(chosen)


_CONTENT_DIGESTS: dict[str, str] = {}


def text_fingerprint(text: datasets.Dataset) -> str:
    """The content digest of corpus rows, computed once per Dataset of this process (keyed by its
    datasets fingerprint): the train text is digested for the tokenizer and for every phase."""
    if text._fingerprint not in _CONTENT_DIGESTS:
        _CONTENT_DIGESTS[text._fingerprint] = corpus_fingerprint(text)
    return _CONTENT_DIGESTS[text._fingerprint]


def build_examples(
    text: datasets.Dataset,
    tokenizer,
    input_format: str,
    max_length: int,
    sentence_task: str | None,
    args,
    seed: int,
    objective: Objective = OBJECTIVES["mlm"],
    config=None,
) -> datasets.Dataset:
    """The objective's rows of at most `max_length` tokens: its own (TLM, T5) or an input format's;
    tokenized once and cached under `--data_cache_dir` (memory-mapped Arrow) unless that is 'none'."""
    root = data_cache_root(args)
    if objective.rows is not None and root is None:
        examples = objective.rows(text, tokenizer, max_length, config)
    elif objective.rows is not None:
        key = digest(
            "rows",
            objective.name,
            text_fingerprint(text),
            tokenizer_fingerprint(tokenizer),
            max_length,
            getattr(config, "lang2id", None),
        )
        examples = cached_rows(lambda: objective.rows(text, tokenizer, max_length, config), key, root)
    elif root is None:
        examples = pretraining_dataset(
            text, tokenizer, input_format, max_length, task=sentence_task, short_seq_prob=args.short_seq_prob, seed=seed
        )
    else:
        tokenized = tokenize_corpus(text, tokenizer, root, text_fingerprint(text))
        examples = packed_dataset(
            tokenized,
            tokenizer,
            input_format,
            max_length,
            root,
            task=sentence_task,
            short_seq_prob=args.short_seq_prob,
            seed=seed,
        )
    if len(examples) == 0:
        raise ValueError(f"no {input_format} examples could be built from the text")
    return examples
