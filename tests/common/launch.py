"""Running a script in fresh processes from a test: 2-process DDP on the CPU under
``accelerate launch`` (gloo), or one plain process, offline and one thread per process.

``--multi_gpu --num_processes 2`` with ``use_cpu`` is what starts two processes on a CPU
(``--cpu --num_processes 2`` silently runs one). Each run gets its own session so that a run
that times out is killed with all its workers: an orphaned rank would otherwise go on holding a
core, or the rendezvous port, for the tests after it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence

import pytest

from tests.common.paths import REPO_ROOT

TWO_PROCESS_LAUNCH = [
    sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
    "--mixed_precision", "no", "--dynamo_backend", "no",
]  # fmt: skip
OFFLINE_ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "PYTHONPATH": str(REPO_ROOT),
}


def run_processes(command: Sequence[str], timeout: float = 400) -> subprocess.CompletedProcess:
    """Run ``command`` (e.g. ``TWO_PROCESS_LAUNCH + [script, *arguments]``) to its end and return
    its exit code and output. Past ``timeout`` seconds the whole process group is killed and the
    test fails with the output's tail."""
    process = subprocess.Popen(
        list(command),
        env={**os.environ, **OFFLINE_ONE_THREAD},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command[:8])} ... ran past {timeout} s (killed):\n{stdout[-2000:]}\n{stderr[-4000:]}")
    return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)


def assert_succeeded(completed: subprocess.CompletedProcess) -> None:
    """The run exited 0; otherwise fail with the tail of its output."""
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-5000:]
