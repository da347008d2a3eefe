"""Measurement helpers for ``bench_bert.py``: interleaved timing, peak resident memory, GEMM peak
and FLOP counting.

Peak memory: torch allocates CPU tensors with malloc/mmap, which ``tracemalloc`` does not see, so
we read the kernel's own high-water mark of the process's resident set (``VmHWM`` in
``/proc/self/status``). Each (scenario, implementation) runs in a fresh subprocess; after the
models and batches are built we return freed heap pages to the OS (``malloc_trim``) and reset the
high-water mark (writing ``5`` to ``/proc/self/clear_refs``, Linux >= 4.0), so the reported peak
is the memory of the workload itself: weights, gradients, optimizer state and activations.
The driver also fixes glibc's mmap threshold for these processes (``MALLOC_MMAP_THRESHOLD_``), so
large tensors are returned to the OS when freed and RSS follows live tensors, not heap slack.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import time
from typing import Callable

import torch


# ----------------------------------------------------------------------------- memory
def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")


def release_free_memory() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc: the reset below still bounds the measurement
        pass


def reset_peak_rss() -> int:
    """Return freed memory to the OS, reset VmHWM to the current RSS and return that RSS in MiB."""
    release_free_memory()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    return _status_kib("VmRSS") // 1024


def peak_rss_mib() -> int:
    """Resident-set high-water mark since the last :func:`reset_peak_rss`, in MiB."""
    return _status_kib("VmHWM") // 1024


def resident_tensor_mib(tensors) -> float:
    """Bytes of the distinct storages behind ``tensors`` (parameters, buffers, optimizer state), in MiB."""
    storages = {}
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu":
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values()) / 2**20


def peak_step_tensor_mib(run: Callable[[], None]) -> float:
    """Peak of the CPU tensor memory allocated by ``run`` above what was live before it, in MiB.

    Read from torch.profiler's allocation records (every tensor allocation and free, in order), so
    unlike RSS it counts neither allocator slack nor Python objects nor libraries: the memory the
    implementation itself asks for, exactly and independently of the machine's load.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    records = [
        event
        for event in prof.profiler.kineto_results.events()
        if event.name() == "[memory]" and event.device_type() == torch.autograd.DeviceType.CPU
    ]
    live = peak = 0
    for event in sorted(records, key=lambda event: event.start_ns()):
        live += event.nbytes()  # negative for a free
        peak = max(peak, live)
    return peak / 2**20


# ----------------------------------------------------------------------------- timing
def interleaved_times(sides: list, steps_per_rep: int, reps: int, warmup_steps: int) -> dict[str, list[float]]:
    """Seconds per step of each side for every repetition.

    Each repetition runs ``steps_per_rep`` steps of one side, then of the other, alternating which
    side goes first, so load from other processes hits both sides alike. A side with a
    ``synchronize()`` method (a GPU side: its kernels run asynchronously) is synchronized before the
    clock starts and before it stops.
    """
    for side in sides:
        for index in range(warmup_steps):
            side.step(index)
    times: dict[str, list[float]] = {side.name: [] for side in sides}
    step_index = warmup_steps
    for rep in range(reps):
        order = sides if rep % 2 == 0 else sides[::-1]
        for side in order:
            synchronize = getattr(side, "synchronize", None) or (lambda: None)
            synchronize()
            start = time.perf_counter()
            for offset in range(steps_per_rep):
                side.step(step_index + offset)
            synchronize()
            times[side.name].append((time.perf_counter() - start) / steps_per_rep)
        step_index += steps_per_rep
    return times


def ratio_summary(times: dict[str, list[float]], ours: str = "ours", theirs: str = "transformers") -> dict:
    """Per-repetition throughput ratios ours/theirs (= time theirs / time ours): median, min, max;
    and the ratio of the best times."""
    ratios = [t / o for t, o in zip(times[theirs], times[ours])]
    return {
        # Best time against best time: the least load-sensitive estimate (load only adds time).
        "ratio_best": min(times[theirs]) / min(times[ours]),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ours_s": statistics.median(times[ours]),
        "theirs_s": statistics.median(times[theirs]),
        "reps": len(ratios),
    }


# ----------------------------------------------------------------------------- FLOPs
class GemmProbe:
    """A pseudo-side for :func:`interleaved_times`: one large square fp32 torch.matmul per step.

    Timed between the model steps it tracks the GEMM peak the machine offers at that moment, so
    MFU per repetition is not skewed by load that changes during the run.
    """

    name = "gemm_peak"

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.a, self.b = torch.randn(size, size), torch.randn(size, size)

    @property
    def flops(self) -> int:
        return 2 * self.size**3

    def step(self, index: int) -> None:
        torch.matmul(self.a, self.b)


def count_flops(run: Callable[[], None]) -> int:
    """FLOPs torch executes in ``run`` (matmuls, SDPA, forward and backward), by FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        run()
    return counter.get_total_flops()


# ----------------------------------------------------------------------------- profiles
def profile_tables(sides: list, steps: int, row_limit: int = 15) -> dict[str, str]:
    """torch.profiler op table (by self CPU time) of ``steps`` steps of each side, after one untimed step."""
    from torch.profiler import profile

    tables = {}
    for side in sides:
        side.step(0)
        with profile() as prof:
            for index in range(1, steps + 1):
                side.step(index)
        tables[side.name] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=row_limit)
    return tables
