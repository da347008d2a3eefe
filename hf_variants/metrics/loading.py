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
