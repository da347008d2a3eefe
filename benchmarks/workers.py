"""Driver-side helpers shared by the benchmarks (no torch import: the driver stays light). Each
measurement runs in a fresh worker process, with its own threads, imports and memory high-water
mark; the worker prints its result as the last line of its output, one JSON object."""

from __future__ import annotations

import json
import os
import subprocess


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
