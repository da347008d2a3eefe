"""A real pretraining corpus of about 10 M words: Debian's documentation packages (cleaned to
prose) plus Jane Austen's novels, the Wikipedia extract and the Lee news articles.

Built once, then reused: ``load_pretraining_corpus()`` fetches each Debian package with
``apt-get download`` and unpacks it with ``dpkg -x`` (never installs it) into
``<cache>/debian/<package>/``, cleans every page to paragraphs (``markup``), drops what is not
prose, removes duplicates, splits by document and saves a ``datasets.DatasetDict`` as Arrow
(``save_to_disk``) under ``<cache>/pretraining_corpus/<key>/``; later loads memory-map it.

Rows: one document (a page, a man page, a chapter, an article, a review) per row, in a fixed
shuffled order; ``text`` holds its paragraphs separated by blank lines; ``source`` names where it
came from (``DOC_SOURCES`` or ``austen`` / ``wikipedia`` / ``lee`` / ``movie_reviews``).
``movie_reviews`` is chosen by name only (``DEFAULT_SOURCES`` leaves it out: its licence is
"personal use"). ``upsample`` repeats a source's training documents (a corpus mix).
docs/corpus.md gives the sizes and licences.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import datasets
from filelock import FileLock

from . import fetch as fetch_module
from .corpora import Document, austen_documents, lee_documents, movie_review_documents, wikipedia_documents
from .doc_sources import DOC_SOURCES, DocSource
from .fetch import deb_archive_prefix
from .markup import MIN_PROSE_WORDS, is_boilerplate, is_prose

logger = logging.getLogger("hf_variants.data")

CORPUS_VERSION = 2  # part of the cache key: bump it whenever cleaning or selection changes
# The literary sources (corpora.py): already clean text, taken as they are.
_LITERARY_DOCUMENTS: dict[str, Callable[[], tuple[Document, ...]]] = {
    "austen": austen_documents,
    "wikipedia": wikipedia_documents,
    "lee": lee_documents,
    "movie_reviews": movie_review_documents,
}
LITERARY_SOURCES = tuple(_LITERARY_DOCUMENTS)
SOURCE_NAMES = tuple(source.name for source in DOC_SOURCES) + LITERARY_SOURCES
# Chosen by name only: the review sample's licence is "personal use" (fetched at run time, as the
# WSJ sample), and leaving it out keeps the default corpus (and its cache key) as it was built.
OPT_IN_SOURCES = ("movie_reviews",)
DEFAULT_SOURCES = tuple(name for name in SOURCE_NAMES if name not in OPT_IN_SOURCES)
UPSAMPLE_SEED = 1  # the order of a mix's rows (its repeated documents among the others)
VALIDATION_FRACTION = 0.01
SHUFFLE_SEED = 0  # rows are saved in a fixed shuffled order
MIN_DOCUMENT_WORDS = 30  # a cleaned page shorter than this is a stub, an index or a redirect
_DOC_SOURCES = {source.name: source for source in DOC_SOURCES}


def _digest(text: str, size: int = 16) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size).digest()


def is_validation_document(source: str, text: str, fraction: float = VALIDATION_FRACTION) -> bool:
    """Whether a document is held out: decided by a hash of its source and text alone, so the
    split does not depend on the order of documents, on the other sources chosen, or on a seed."""
    if not 0 < fraction < 1:
        raise ValueError(f"validation fraction must be in (0, 1), got {fraction}")
    bucket = int.from_bytes(_digest(f"{source}\n{text}", 8), "big") / 2**64
    return bucket < fraction


def deduplicate(
    documents: Iterable[tuple[str, list[str]]],
    stats: dict[str, dict[str, int]] | None = None,
    min_document_words: int = MIN_DOCUMENT_WORDS,
) -> Iterator[tuple[str, str]]:
    """``(source, paragraphs)`` → ``(source, text)``, keeping first occurrences only.

    A paragraph of at least MIN_PROSE_WORDS words seen before (exact text, in any document of any
    source) is dropped: shared boilerplate, a note repeated on every page, a page shipped twice.
    Shorter paragraphs (a novel's "Yes, sir.") may repeat. A document left with fewer than
    ``min_document_words`` words, or whose text equals an earlier document's, is dropped.
    ``stats[source]`` counts ``duplicate_paragraphs``, ``short_documents``, ``duplicate_documents``.
    """
    seen_paragraphs: set[bytes] = set()
    seen_documents: set[bytes] = set()
    stats = stats if stats is not None else {}
    for source, paragraphs in documents:
        counts = stats.setdefault(source, {})
        kept = []
        for paragraph in paragraphs:
            if len(paragraph.split()) >= MIN_PROSE_WORDS:
                key = _digest(paragraph)
                if key in seen_paragraphs:
                    counts["duplicate_paragraphs"] = counts.get("duplicate_paragraphs", 0) + 1
                    continue
                seen_paragraphs.add(key)
            kept.append(paragraph)
        text = "\n\n".join(kept)
        if len(text.split()) < min_document_words:
            counts["short_documents"] = counts.get("short_documents", 0) + 1
            continue
        key = _digest(text)
        if key in seen_documents:
            counts["duplicate_documents"] = counts.get("duplicate_documents", 0) + 1
            continue
        seen_documents.add(key)
        yield source, text


def _cache_root(root: str | Path | None) -> Path:
    """``root``, or the data cache (``hf_variants.data.cache_dir()``) when it is None."""
    return Path(root) if root is not None else fetch_module.cache_dir()


def fetch_debian_package(package: str, root: Path | None = None, version: str = "") -> Path:
    """The unpacked files of a Debian package (``apt-get download`` + ``dpkg -x``, once).

    Returns ``<root>/debian/<package>``; ``root`` defaults to the data cache. ``version`` pins the
    revision (``apt-get download package=version``); a tree unpacked from another revision is
    fetched again. A ``.deb`` of that revision already placed in ``<root>/downloads/`` (fetched by
    hand elsewhere) is used instead of downloading. Raises RuntimeError naming the package, the
    version and the command to run when it cannot be fetched.
    """
    root = _cache_root(root)
    target = root / "debian" / package
    marker = target / ".unpacked"
    if marker.exists() and marker.read_text(encoding="utf-8").startswith(deb_archive_prefix(package, version)):
        return target
    root.mkdir(parents=True, exist_ok=True)
    if shutil.which("dpkg") is None:
        raise RuntimeError(f"unpacking Debian package {package!r} needs `dpkg -x`, and dpkg is not on PATH")
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as scratch:
        source = fetch_module.PackageSource(name=package, package=package, version=version, kind="deb", members=())
        archive = fetch_module.find_placed_archive(source, root / "downloads")
        if archive is None:
            downloads = Path(scratch) / "download"
            downloads.mkdir()
            command = shlex.join(source.download_command(downloads))
            print(f"[hf_variants.data] {command} ...", file=sys.stderr)
            try:
                archive = fetch_module._download(source, downloads)
            except RuntimeError as error:
                raise RuntimeError(
                    f"pretraining corpus: could not fetch the Debian package {package!r} with `{command}` "
                    f"(offline, the package lists lack it, or the archive no longer ships version {version!r}?). "
                    f"Fetch that .deb where it is reachable (snapshot.debian.org keeps every version) and put it "
                    f"into {root / 'downloads'}; a different version is a different corpus (the pin is in "
                    f"hf_variants/data/doc_sources.py, the sizes in docs/corpus.md).\n{error}"
                ) from error
        unpacked = Path(scratch) / "tree"
        result = subprocess.run(["dpkg", "-x", str(archive), str(unpacked)], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"`dpkg -x {archive.name}` failed for {package!r}: {result.stderr.strip()[-500:]}")
        (unpacked / ".unpacked").write_text(archive.name + "\n", encoding="utf-8")
        if target.exists():  # a half-written tree from an interrupted run
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(unpacked, target)
    return target


def _pruned_package_tree(source: DocSource, root: Path | None) -> Path:
    """The unpacked package with only the files ``source`` reads (and copyright files) kept:
    documentation packages are mostly images, API pages and translations we never read (2.1 GB
    unpacked, ~0.3 GB pruned). A tree pruned for a different selection is fetched again."""
    # One process at a time per package: another one pruning or replacing the tree while this one
    # reads it would make files vanish under the reader (two runs started together).
    packages = _cache_root(root) / "debian"
    packages.mkdir(parents=True, exist_ok=True)
    with FileLock(str(packages / f"{source.package}.lock")):
        return _prune_package_tree(source, root)


def _prune_package_tree(source: DocSource, root: Path | None) -> Path:
    tree = fetch_debian_package(source.package, root, source.version)
    stamp = tree / ".pruned"
    selection = json.dumps([source.kind, list(source.include), source.exclude])
    if stamp.exists() and stamp.read_text(encoding="utf-8") != selection:
        shutil.rmtree(tree)
        tree = fetch_debian_package(source.package, root, source.version)
    if not stamp.exists():
        keep = {path.resolve() for path in source.files(tree)}
        for directory, _subdirectories, files in os.walk(tree, topdown=False):
            for file_name in files:
                path = Path(directory) / file_name
                # Symbolic links stay (tiny, and a glob may pass through one).
                kept_name = file_name in ("copyright", ".unpacked", ".pruned")
                if not path.is_symlink() and not kept_name and path.resolve() not in keep:
                    path.unlink()
            if directory != str(tree) and not os.listdir(directory):
                os.rmdir(directory)
        stamp.write_text(selection, encoding="utf-8")
    return tree


def source_documents(name: str, root: Path | None = None) -> Iterator[tuple[str, list[str]]]:
    """``(source, prose paragraphs)`` for each document of one source, before deduplication.

    Documentation pages keep only the paragraphs ``is_prose`` accepts, less licence notices
    (``is_boilerplate``); the literary sources
    (already clean, and a novel's short lines of dialogue are prose) are taken as they are."""
    if name in _DOC_SOURCES:
        source = _DOC_SOURCES[name]
        for _title, paragraphs in source.documents(_pruned_package_tree(source, root)):
            yield name, [paragraph for paragraph in paragraphs if is_prose(paragraph) and not is_boilerplate(paragraph)]
    elif name in LITERARY_SOURCES:
        for document in _LITERARY_DOCUMENTS[name]():
            yield name, list(document.paragraphs)
    else:
        raise ValueError(f"unknown pretraining corpus source {name!r}; known sources: {', '.join(SOURCE_NAMES)}")


def _check_sources(sources: Sequence[str] | None) -> tuple[str, ...]:
    if sources is None:
        return DEFAULT_SOURCES
    if isinstance(sources, str):
        raise ValueError(f"sources must be a list of source names, got the string {sources!r}")
    unknown = [name for name in sources if name not in SOURCE_NAMES]
    if unknown or not sources:
        raise ValueError(
            f"unknown or no pretraining corpus sources {unknown or list(sources)}; "
            f"known sources: {', '.join(SOURCE_NAMES)}"
        )
    return tuple(dict.fromkeys(sources))


def corpus_path(
    cache_dir: str | Path | None = None,
    sources: Sequence[str] | None = None,
    validation_fraction: float = VALIDATION_FRACTION,
) -> Path:
    """Where the corpus for these sources is (or will be) saved: one folder per version, source
    list and validation fraction, so changing any of them never reads a stale build."""
    names = _check_sources(sources)
    root = _cache_root(cache_dir)
    key = hashlib.sha1(json.dumps([CORPUS_VERSION, names, validation_fraction]).encode()).hexdigest()[:10]
    return root / "pretraining_corpus" / f"v{CORPUS_VERSION}-{key}"


def build_pretraining_corpus(
    cache_dir: str | Path | None = None,
    sources: Sequence[str] | None = None,
    validation_fraction: float = VALIDATION_FRACTION,
) -> datasets.DatasetDict:
    """Build (always) and save the corpus; ``load_pretraining_corpus`` reuses the saved copy."""
    names = _check_sources(sources)
    is_validation_document("", "", validation_fraction)  # validates the fraction before any work
    root = Path(cache_dir) if cache_dir is not None else None
    started = time.time()
    stats: dict[str, dict[str, int]] = {name: {} for name in names}
    rows: dict[str, dict[str, list[str]]] = {
        "train": {"text": [], "source": []},
        "validation": {"text": [], "source": []},
    }
    documents = (document for name in names for document in source_documents(name, root))
    for source, text in deduplicate(documents, stats):
        split = "validation" if is_validation_document(source, text, validation_fraction) else "train"
        rows[split]["text"].append(text)
        rows[split]["source"].append(source)
        counts = stats[source]
        counts[f"{split}_documents"] = counts.get(f"{split}_documents", 0) + 1
        counts[f"{split}_words"] = counts.get(f"{split}_words", 0) + len(text.split())
    for columns in rows.values():
        # A fixed shuffle: built in source order, the first N rows would all be kernel docs; shuffled,
        # any prefix (a test's slice, run_pretraining's --max_documents) samples every source.
        order = list(range(len(columns["text"])))
        random.Random(SHUFFLE_SEED).shuffle(order)
        for name in columns:
            columns[name] = [columns[name][index] for index in order]
    features = datasets.Features({"text": datasets.Value("string"), "source": datasets.Value("string")})
    corpus = datasets.DatasetDict(
        {split: datasets.Dataset.from_dict(columns, features=features) for split, columns in rows.items()}
    )
    target = corpus_path(cache_dir, names, validation_fraction)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    corpus.save_to_disk(str(partial))
    summary = {
        "version": CORPUS_VERSION,
        "sources": list(names),
        "packages": _unpacked_archives(names, root),
        "validation_fraction": validation_fraction,
        "build_seconds": round(time.time() - started, 1),
        "per_source": stats,
        "train_words": sum(s.get("train_words", 0) for s in stats.values()),
        "validation_words": sum(s.get("validation_words", 0) for s in stats.values()),
        "train_documents": corpus["train"].num_rows,
        "validation_documents": corpus["validation"].num_rows,
    }
    (partial / "corpus_stats.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    os.replace(partial, target)
    logger.info(
        "pretraining corpus saved to %s (%d + %d words)", target, summary["train_words"], summary["validation_words"]
    )
    return datasets.DatasetDict.load_from_disk(str(target))


def _unpacked_archives(names: Sequence[str], root: Path | None) -> dict[str, str]:
    """``{package: the .deb its tree was unpacked from}`` for the documentation sources in ``names``."""
    packages = _cache_root(root) / "debian"
    return {
        _DOC_SOURCES[name].package: (packages / _DOC_SOURCES[name].package / ".unpacked").read_text("utf-8").strip()
        for name in names
        if name in _DOC_SOURCES
    }


def _built_from_pinned_versions(target: Path, sources: Sequence[str] | None) -> bool:
    """Whether the build saved in ``target`` read each documentation package at its pinned version
    (a build from before the pins, or from another revision, is rebuilt: it is a different text)."""
    stats_path = target / "corpus_stats.json"
    recorded = json.loads(stats_path.read_text("utf-8")).get("packages") if stats_path.exists() else None
    if recorded is None:
        return False
    wanted = [_DOC_SOURCES[name] for name in _check_sources(sources) if name in _DOC_SOURCES]
    return all(
        recorded.get(source.package, "").startswith(deb_archive_prefix(source.package, source.version))
        for source in wanted
    )


def load_pretraining_corpus(
    cache_dir: str | Path | None = None,
    sources: Sequence[str] | None = None,
    validation_fraction: float = VALIDATION_FRACTION,
    upsample: Mapping[str, int] | None = None,
) -> datasets.DatasetDict:
    """The pretraining corpus as ``DatasetDict({"train", "validation"})``, columns ``text`` (one
    document per row, paragraphs separated by a blank line) and ``source``.

    ``cache_dir``: the cache root (default ``hf_variants.data.cache_dir()``, i.e.
    ``$HF_VARIANTS_CACHE``); ``sources``: a subset of ``SOURCE_NAMES`` (default
    ``DEFAULT_SOURCES``: all but the opt-in movie reviews). The first call fetches and builds
    (minutes; see docs/corpus.md), later calls memory-map the Arrow files. The held-out documents
    are chosen by a hash of each document (``is_validation_document``).
    ``upsample``: ``{source: k}`` takes that source's training documents k times (a whole number
    >= 1), in a fixed shuffled order; the validation split is never repeated.
    """
    target = corpus_path(cache_dir, sources, validation_fraction)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Processes started together (two runs, or DDP ranks) build it once: the others wait here,
    # then read the saved copy.
    with FileLock(str(target.with_name(target.name + ".lock"))):
        if (target / "dataset_dict.json").exists() and _built_from_pinned_versions(target, sources):
            corpus = datasets.DatasetDict.load_from_disk(str(target))
        else:
            corpus = build_pretraining_corpus(cache_dir, sources, validation_fraction)
    return upsample_sources(corpus, upsample) if upsample else corpus


def upsample_sources(corpus: datasets.DatasetDict, factors: Mapping[str, int]) -> datasets.DatasetDict:
    """``corpus`` with each named source's training documents taken ``factors[source]`` times."""
    train = corpus["train"]
    sources = train["source"]
    present = set(sources)
    for source, factor in factors.items():
        if source not in present:
            raise ValueError(
                f"upsample names {source!r}, which this corpus does not hold; its sources: {', '.join(sorted(present))}"
            )
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ValueError(f"upsample factor for {source!r} must be a whole number >= 1, got {factor!r}")
    indices = [index for index, source in enumerate(sources) for _ in range(factors.get(source, 1))]
    random.Random(UPSAMPLE_SEED).shuffle(indices)
    return datasets.DatasetDict({**corpus, "train": train.select(indices)})


def pretraining_corpus_stats(
    cache_dir: str | Path | None = None,
    sources: Sequence[str] | None = None,
    validation_fraction: float = VALIDATION_FRACTION,
) -> dict:
    """The saved build's counts (words and documents per source and split, duplicates dropped,
    build time); builds the corpus first if needed."""
    target = corpus_path(cache_dir, sources, validation_fraction)
    if not (target / "corpus_stats.json").exists():
        load_pretraining_corpus(cache_dir, sources, validation_fraction)
    return json.loads((target / "corpus_stats.json").read_text(encoding="utf-8"))
