"""Run a training script and kill it with SIGKILL at a chosen point: the real kill -9 of a real
process, placed exactly (test helper for tests/objectives/test_resume_*.py and test_atomic_checkpoints.py).

    python tests/common/crash_points.py SPEC SCRIPT [ARGS...]
    accelerate launch ... tests/common/crash_points.py SPEC SCRIPT [ARGS...]   # every process runs it

SPEC is one of
    none                    run normally
    after_step:N            die when optimizer step N has finished (before it is logged or saved)
    writing:NAME:K          die halfway through the K-th write of a file named NAME (torch.save:
                            optimizer.pt, scheduler.pt, rng_state*.pth, training_args.bin; or the
                            safetensors writer: model.safetensors): half its bytes reach the disk
optionally followed by "@R": only the process of rank R dies (torchrun then stops the others).
"""

from __future__ import annotations

import io
import os
import runpy
import signal
import sys


def die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def kill_after_step(step: int) -> None:
    from transformers.trainer_callback import CallbackHandler

    real_on_step_end = CallbackHandler.on_step_end

    def on_step_end(self, args, state, control):
        if state.global_step == step:
            die()
        return real_on_step_end(self, args, state, control)

    CallbackHandler.on_step_end = on_step_end


def kill_while_writing(name: str, occurrence: int) -> None:
    import torch
    import transformers.modeling_utils

    seen = 0

    def is_target(path) -> bool:
        nonlocal seen
        if isinstance(path, (str, os.PathLike)) and os.path.basename(os.fspath(path)) == name:
            seen += 1
            return seen == occurrence
        return False

    def write_half_and_die(path, data: bytes) -> None:
        with open(path, "wb") as handle:
            handle.write(data[: len(data) // 2])
            handle.flush()
            os.fsync(handle.fileno())
        die()

    real_torch_save = torch.save

    def torch_save(obj, f, *args, **kwargs):
        if is_target(f):
            buffer = io.BytesIO()
            real_torch_save(obj, buffer, *args, **kwargs)
            write_half_and_die(f, buffer.getvalue())
        return real_torch_save(obj, f, *args, **kwargs)

    real_safe_save = transformers.modeling_utils.safe_save_file

    def safe_save_file(tensors, filename, metadata=None):
        if is_target(filename):
            real_safe_save(tensors, filename, metadata=metadata)
            with open(filename, "rb") as handle:
                data = handle.read()
            write_half_and_die(filename, data)
        return real_safe_save(tensors, filename, metadata=metadata)

    torch.save = torch_save
    transformers.modeling_utils.safe_save_file = safe_save_file


def install(spec: str) -> None:
    spec, _, rank = spec.partition("@")
    if spec == "none" or (rank and os.environ.get("RANK", "0") != rank):
        return
    kind, _, rest = spec.partition(":")
    if kind == "after_step":
        kill_after_step(int(rest))
    elif kind == "writing":
        name, _, occurrence = rest.rpartition(":")
        kill_while_writing(name, int(occurrence))
    else:
        raise SystemExit(f"unknown crash point {spec!r}")


if __name__ == "__main__":
    crash_spec, script, *script_args = sys.argv[1:]
    install(crash_spec)
    sys.argv = [script, *script_args]
    # As `python script.py` does: the script's folder first on sys.path (examples/run_glue.py imports
    # examples_support, beside it); run_path alone does not put it there.
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
