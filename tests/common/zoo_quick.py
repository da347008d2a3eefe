"""The zoo's --quick build, shared by tests/research/test_zoo.py and test_zoo_other.py."""

from __future__ import annotations

from pathlib import Path

QUICK = ["--quick", "--seeds", "1", "--budget_minutes", "5"]


def load_zoo():
    """research/zoo.py as a module."""
    from research import zoo

    return zoo


def build_quick(zoo, root: Path, variants: list[str], *extra: str) -> tuple[dict, Path, Path]:
    """``zoo.main`` with --quick on ``variants`` under ``root``: (records, output_dir, results_dir)."""
    output_dir, results_dir = root / "runs", root / "results"
    records = zoo.main(
        QUICK + ["--variants", *variants, "--output_dir", str(output_dir), "--results_dir", str(results_dir), *extra]
    )
    return records, output_dir, results_dir
