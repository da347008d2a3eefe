"""Where things are, for tests in any folder under tests/ (``from tests.common.paths import ...``)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = REPO_ROOT / "tests"
COMMON_DIR = TESTS_DIR / "common"  # shared testers and the subprocess helpers (crash_points.py)
EXAMPLES_DIR = REPO_ROOT / "examples"
BENCHMARKS_DIR = REPO_ROOT / "benchmarks"
