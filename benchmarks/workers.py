"""Driver-side helpers shared by the benchmarks (no torch import: the driver stays light). Each
measurement runs in a fresh worker process, with its own threads, imports and memory high-water
mark; the worker prints its result as the last line of its output, one JSON object."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time


def spawn_worker(command: list[str], what: str, env: dict[str, str] | None = None) -> dict:
    """Run one worker `command` and return the JSON object it printed last; a RuntimeError naming
    `what` with the end of the worker's stderr when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as the tables record them beside each row."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_header(program: str, argv: list[str] | None, threads: int, details: str) -> str:
    """The line a results table is headed by, the same for every benchmark driver: when (UTC), the
    command that reproduces it (``python <program> <argv>``; ``argv`` None reads ``sys.argv``), the
    torch and transformers versions, threads, CPU, cores, the load average at the start, then
    ``details`` (what this driver adds: batch, repetitions). torch and transformers are imported
    here, not at module level: the driver's own imports stay light until it measures."""
    import torch
    import transformers

    command = " ".join(["python", program, *(sys.argv[1:] if argv is None else argv)])
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; `{command}`; torch {torch.__version__}, "
        f"transformers {transformers.__version__}, {threads} threads, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores; load average {load_average()}; {details}"
    )
