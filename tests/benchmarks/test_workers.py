"""benchmarks/workers.py: the run header every driver's results table starts with."""

import re

import torch
import transformers

from benchmarks.workers import run_header


def test_run_header_names_the_command_the_versions_and_the_machine():
    header = run_header("benchmarks/bench_x.py", ["--quick", "--reps", "2"], 3, "B=4 rows, 2 timed repetitions")
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC; ", header)
    assert "`python benchmarks/bench_x.py --quick --reps 2`" in header
    assert f"torch {torch.__version__}, transformers {transformers.__version__}, 3 threads, " in header
    assert re.search(r"load average \d+\.\d\d \d+\.\d\d \d+\.\d\d; B=4 rows, 2 timed repetitions$", header)


def test_run_header_without_argv_reads_the_command_line(monkeypatch):
    monkeypatch.setattr("sys.argv", ["benchmarks/bench_x.py", "--write", "out.md"])
    assert "`python benchmarks/bench_x.py --write out.md`" in run_header("benchmarks/bench_x.py", None, 2, "")
