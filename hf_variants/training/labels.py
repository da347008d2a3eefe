"""Labels for the fine-tuning scripts (examples/run_glue, run_ner, run_swag, run_distillation):
class names from a ClassLabel or the training split, label ids kept from a fine-tuned checkpoint,
and encoding that names the rows of unseen or missing labels (ValueError with file and line for
local files)."""

from __future__ import annotations

import logging
import math
from typing import Any

import datasets
import transformers

from hf_variants.data.data_files import describe_rows

logger = logging.getLogger("hf_variants.examples")


def label_feature(dataset: datasets.Dataset, column: str) -> datasets.ClassLabel | None:
    """The ClassLabel behind ``column`` (also inside a Sequence, as for NER tags), if any."""
    feature = dataset.features[column]
    while isinstance(feature, (datasets.Sequence, datasets.List)):
        feature = feature.feature
    return feature if isinstance(feature, datasets.ClassLabel) else None


def label_names(dataset: datasets.Dataset, column: str) -> list[str]:
    """Class names: the ClassLabel's names, else the sorted distinct values (flattened for
    per-token labels) of the training split, as strings."""
    feature = label_feature(dataset, column)
    if feature is not None:
        return list(feature.names)
    rows = list(dataset[column])
    missing = [row for row, value in enumerate(rows) if value is None or (isinstance(value, list) and None in value)]
    if missing:  # an empty csv field or a JSON null: not a class named "None"
        raise ValueError(
            f"column {column!r} has no label at {describe_rows(dataset, missing[:5])}"
            + (f" and {len(missing) - 5} more rows" if len(missing) > 5 else "")
        )
    values = [value for row in rows for value in row] if rows and isinstance(rows[0], list) else rows
    return sorted({str(value) for value in values})


def label_ids_for(config: transformers.PreTrainedConfig | None, names: list[str]) -> dict[str, int]:
    """Map class names to ids; keep a fine-tuned checkpoint's own mapping when it has these labels."""
    if config is not None and set(config.label2id) == set(names) and not _default_label_names(config.label2id):
        return {name: int(index) for name, index in config.label2id.items()}
    if config is not None and not _default_label_names(config.label2id):
        logger.warning(
            "the checkpoint's labels %s differ from the data's %s: using the data's", sorted(config.label2id), names
        )
    return {name: index for index, name in enumerate(names)}


def _default_label_names(label2id: dict) -> bool:
    return all(str(name).startswith("LABEL_") for name in label2id)


def encode_labels(
    dataset: datasets.Dataset, column: str, label2id: dict[str, int], split: str, *, hidden_label: int | None = None
) -> list:
    """Label ids of ``column`` (one per row, or a list per row for per-token labels).

    Names are looked up in ``label2id`` (ClassLabel ids are turned into their names first, so a
    split's own ClassLabel order never matters). A value absent from training, or a ClassLabel
    id outside its names, raises ValueError with the offending rows' ids. ``hidden_label`` (GLUE
    test sets: -1) marks rows without a label; they pass through unchanged.
    """
    feature = label_feature(dataset, column)
    values = list(dataset[column])
    bad_rows: dict[int, Any] = {}

    def encode(value, row):
        if hidden_label is not None and value == hidden_label:
            return hidden_label
        if feature is not None:
            if not isinstance(value, int) or not 0 <= value < feature.num_classes:
                bad_rows.setdefault(row, value)
                return None
            value = feature.names[value]
        index = label2id.get(str(value))
        if index is None:
            bad_rows.setdefault(row, value)
        return index

    encoded = [
        [encode(v, row) for v in value] if isinstance(value, list) else encode(value, row)
        for row, value in enumerate(values)
    ]
    if bad_rows:
        rows = sorted(bad_rows)[:10]
        raise ValueError(
            f"{split} split, column {column!r}: labels {sorted({str(bad_rows[r]) for r in bad_rows})[:10]} are out of range or "
            f"unseen in training (known labels: {sorted(label2id)}); examples {describe_rows(dataset, rows)}"
            + (f" and {len(bad_rows) - 10} more" if len(bad_rows) > 10 else "")
        )
    return encoded


def regression_targets(dataset: datasets.Dataset, column: str, split: str) -> list[float]:
    """``column`` as finite floats (regression labels); ValueError naming the rows (file and line)
    of a missing value, a NaN or an infinity, which would make the loss NaN."""
    values = list(dataset[column])
    bad = [row for row, value in enumerate(values) if not isinstance(value, (int, float)) or not math.isfinite(value)]
    if bad:
        raise ValueError(
            f"{split} split, column {column!r}: regression targets must be finite numbers; "
            f"{[values[row] for row in bad[:5]]} at {describe_rows(dataset, bad[:5])}"
        )
    return [float(value) for value in values]
