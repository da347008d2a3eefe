"""Labelled image sets: Fashion-MNIST (Debian ``dataset-fashion-mnist``) and scikit-learn's digits.

Both come as ``datasets.DatasetDict`` with train/validation/test splits and the columns
transformers' image examples expect: ``image`` (``datasets.Image``: a PIL image, mode "L") and
``label`` (``ClassLabel``), plus ``id`` (the row in the source file, so every image can be traced
back). Sources, sizes and licences are in docs/data.md.
"""

from __future__ import annotations

import gzip
import os
import shutil
import struct
import tempfile
from pathlib import Path

import datasets
import numpy as np

from .fetch import cache_dir, fetch
from .labelled import split_indices
from .sources import FASHION_MNIST

FASHION_MNIST_LABELS = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]  # fmt: skip  (the order of the label ids in the files, from the data set's README)
FASHION_MNIST_TRAIN = 60_000
FASHION_MNIST_TEST = 10_000
FASHION_MNIST_VALIDATION_PER_CLASS = 500  # 5,000 of the training images held out, 500 per class
FASHION_MNIST_SIDE = 28
# Bumped whenever the cached Arrow layout changes, so an old cache is rebuilt rather than misread.
FASHION_MNIST_CACHE_VERSION = 1

DIGITS_IMAGES = 1_797
DIGITS_SIDE = 8
DIGITS_MAX_VALUE = 16  # load_digits() counts 0..16 "on" pixels per 4x4 block of the original scans

IDX_IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
IDX_LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dimension


def read_idx(path: Path, magic: int) -> np.ndarray:
    """An IDX file (LeCun's MNIST format, gzipped) as a uint8 array: (N, rows, columns) or (N,).

    The header is a big-endian magic number (``0x0000080D``: unsigned bytes, D dimensions) and
    the D dimension sizes; the data follows. A wrong magic number or length raises RuntimeError.
    """
    raw = gzip.decompress(path.read_bytes())
    (found,) = struct.unpack(">I", raw[:4])
    if found != magic:
        raise RuntimeError(f"{path}: IDX magic number {found:#010x}, expected {magic:#010x}")
    dimensions = magic & 0xFF
    shape = struct.unpack(f">{dimensions}I", raw[4 : 4 + 4 * dimensions])
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dimensions)
    if body.size != int(np.prod(shape)):
        raise RuntimeError(f"{path}: header says shape {shape} ({int(np.prod(shape))} bytes), found {body.size} bytes")
    return body.reshape(shape)


def _image_features(label_names: list[str]) -> datasets.Features:
    return datasets.Features(
        {"id": datasets.Value("int64"), "image": datasets.Image(), "label": datasets.ClassLabel(names=label_names)}
    )


def _image_split(images: np.ndarray, labels: np.ndarray, rows: np.ndarray, names: list[str]) -> datasets.Dataset:
    """The images at ``rows`` (in that order) as a Dataset of (id, image, label)."""
    return datasets.Dataset.from_dict(
        {"id": rows.tolist(), "image": list(images[rows]), "label": labels[rows].tolist()},
        features=_image_features(names),
    )


def fashion_mnist_validation_rows(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Seeded, class-balanced choice of ``per_class`` training rows per class for validation (sorted)."""
    generator = np.random.default_rng(seed)
    chosen = [
        generator.choice(np.flatnonzero(labels == label), size=per_class, replace=False) for label in np.unique(labels)
    ]
    return np.sort(np.concatenate(chosen))


def _build_fashion_mnist(seed: int) -> datasets.DatasetDict:
    paths = fetch(FASHION_MNIST)
    parts = {}
    for prefix, expected in (("train", FASHION_MNIST_TRAIN), ("t10k", FASHION_MNIST_TEST)):
        images = read_idx(paths[f"{prefix}-images-idx3-ubyte.gz"], IDX_IMAGES_MAGIC)
        labels = read_idx(paths[f"{prefix}-labels-idx1-ubyte.gz"], IDX_LABELS_MAGIC)
        if images.shape != (expected, FASHION_MNIST_SIDE, FASHION_MNIST_SIDE) or labels.shape != (expected,):
            raise RuntimeError(
                f"Fashion-MNIST {prefix}: images {images.shape}, labels {labels.shape}; expected {expected} 28x28"
            )
        if labels.max() >= len(FASHION_MNIST_LABELS):
            raise RuntimeError(
                f"Fashion-MNIST {prefix}: label {labels.max()} outside 0..{len(FASHION_MNIST_LABELS) - 1}"
            )
        parts[prefix] = (images, labels)
    train_images, train_labels = parts["train"]
    held_out = fashion_mnist_validation_rows(train_labels, FASHION_MNIST_VALIDATION_PER_CLASS, seed)
    # Training rows in a seeded shuffled order, so that --max_train_samples N takes a representative
    # subset (the file itself is already mixed, but this keeps the guarantee independent of it).
    kept = np.random.default_rng(seed).permutation(np.setdiff1d(np.arange(FASHION_MNIST_TRAIN), held_out))
    test_images, test_labels = parts["t10k"]
    return datasets.DatasetDict(
        {
            "train": _image_split(train_images, train_labels, kept, FASHION_MNIST_LABELS),
            "validation": _image_split(train_images, train_labels, held_out, FASHION_MNIST_LABELS),
            "test": _image_split(test_images, test_labels, np.arange(FASHION_MNIST_TEST), FASHION_MNIST_LABELS),
        }
    )


def load_fashion_mnist(seed: int = 42) -> datasets.DatasetDict:
    """Fashion-MNIST (Xiao et al. 2017; Zalando, MIT/Expat licence), from Debian's
    ``dataset-fashion-mnist`` package (fetched once with ``apt-get download``; nothing installed).

    70,000 grayscale 28x28 images of clothing in 10 classes (``FASHION_MNIST_LABELS``). Splits:
    ``test`` is the official 10,000-image test set (``id`` = row in ``t10k-*``); ``validation``
    holds 5,000 of the 60,000 official training images (500 per class, seeded); ``train`` the
    other 55,000 in a seeded shuffled order (``id`` = row in ``train-*``).

    Building the Arrow tables (PNG-encoding 70,000 images) takes a while on a small machine, so
    the result is saved under ``cache_dir()/fashion_mnist/`` once and memory-mapped afterwards.
    """
    target = cache_dir() / FASHION_MNIST.name / f"datasets-v{FASHION_MNIST_CACHE_VERSION}-seed{seed}"
    if not target.is_dir():
        built = _build_fashion_mnist(seed)
        scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        try:
            built.save_to_disk(str(scratch / "data"))
            os.replace(scratch / "data", target)  # atomic: a concurrent or interrupted build leaves no half cache
        except OSError:
            if not target.is_dir():  # not lost to a concurrent build that finished first
                raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return datasets.load_from_disk(str(target))


def load_digits(seed: int = 42) -> datasets.DatasetDict:
    """scikit-learn's handwritten digits (``sklearn.datasets.load_digits``; UCI optical recognition
    of handwritten digits, CC BY 4.0): 1,797 grayscale 8x8 images, classes "0".."9".

    Pixel counts 0..16 are scaled to 0..255 (``round(value * 255 / 16)``) so the images are
    ordinary 8-bit grayscale. Fixed seeded 80/10/10 train/validation/test split, stratified by
    class (``id`` = row in ``load_digits()``). Needs scikit-learn (``pip install scikit-learn``).
    """
    try:
        from sklearn.datasets import load_digits as sklearn_load_digits
    except ImportError as error:
        raise ImportError("hf_variants/digits needs scikit-learn: pip install scikit-learn") from error
    bunch = sklearn_load_digits()
    counts, labels = np.asarray(bunch.images), np.asarray(bunch.target)
    if counts.shape != (DIGITS_IMAGES, DIGITS_SIDE, DIGITS_SIDE) or counts.max() > DIGITS_MAX_VALUE:
        raise RuntimeError(
            f"load_digits(): images {counts.shape} with maximum {counts.max()}; expected 1,797 8x8 in 0..16"
        )
    images = np.rint(counts * (255 / DIGITS_MAX_VALUE)).astype(np.uint8)
    names = [str(name) for name in bunch.target_names]
    return datasets.DatasetDict(
        {
            split: _image_split(images, labels, np.asarray(rows, dtype=np.int64), names)
            for split, rows in split_indices(DIGITS_IMAGES, seed, strata=labels.tolist()).items()
        }
    )
