"""Where the package's ``evaluate`` modules live, and a cached loader."""

from __future__ import annotations

import functools
from pathlib import Path

MODULES_DIR = Path(__file__).resolve().parent / "evaluate_modules"
METRIC_NAMES = tuple(sorted(path.name for path in MODULES_DIR.iterdir() if (path / f"{path.name}.py").is_file()))


def metric_path(name: str) -> str:
    """The folder of the shipped module ``name`` (what ``evaluate.load`` takes), or a ValueError."""
    if name not in METRIC_NAMES:
        raise ValueError(f"no shipped metric {name!r}; available: {', '.join(METRIC_NAMES)}")
    return str(MODULES_DIR / name)


@functools.lru_cache(maxsize=None)
def load_metric(name: str, **init_kwargs):
    """``evaluate.load`` of the shipped module ``name`` (offline; loaded once per process)."""
    import evaluate

    return evaluate.load(metric_path(name), **init_kwargs)


def paired_metric_info(description: str, value_type: str):
    """The ``evaluate.MetricInfo`` of a metric over paired scalars: ``value_type`` "int32" (label
    ids) or "float64" (scores). Shared by the shipped modules (they import the installed package)."""
    import datasets
    import evaluate

    value = datasets.Value(value_type)
    return evaluate.MetricInfo(
        description=description,
        citation="",
        inputs_description="predictions, references",
        features=datasets.Features({"predictions": value, "references": value}),
    )


def squad_metric_info(description: str, version_2: bool):
    """The ``evaluate.MetricInfo`` of SQuAD v1.1 (``version_2=False``) or v2.0 predictions/references."""
    import datasets
    import evaluate

    prediction = {"id": datasets.Value("string"), "prediction_text": datasets.Value("string")}
    if version_2:
        prediction["no_answer_probability"] = datasets.Value("float32")
    answers = datasets.Sequence({"text": datasets.Value("string"), "answer_start": datasets.Value("int32")})
    return evaluate.MetricInfo(
        description=description,
        citation="",
        inputs_description='predictions: [{"id", "prediction_text", ...}]; references: [{"id", "answers"}]',
        features=datasets.Features(
            {"predictions": prediction, "references": {"id": datasets.Value("string"), "answers": answers}}
        ),
    )
