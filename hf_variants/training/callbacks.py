"""Trainer callbacks of the training scripts (run_pretraining.py, run_clm.py and, for --max_time,
the fine-tuning scripts): a wall-clock budget, throughput (tokens/s, the input pipeline's share of
a step, ETA) in the logs, and a held-out curve written as training goes.

- `InputMeter`: what the input pipeline spent (seconds fetching rows and collating), filled by the
  training stream and the collator wrapper.
- `TimeBudget` (a TrainerCallback): stops training once `--max_time` minutes have passed, counting
  the minutes of earlier, interrupted runs (kept in the checkpoint's trainer_state.json), and has
  the stopping step saved.
- `ProgressReport` (a TrainerCallback): evaluates every `eval_steps` steps and appends the result to
  `eval_curve.jsonl`; `metrics()` gives the throughput numbers the trainer adds to each log line.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

logger = logging.getLogger("run_pretraining")


@dataclass
class InputMeter:
    """Seconds this process spent fetching rows and collating them (the input pipeline)."""

    seconds: float = 0.0


class TimeBudget(TrainerCallback, ExportableState):
    """Stop after `minutes` of training wall-clock time, summed over resumed runs; the step training
    stops at is saved (a checkpoint to resume from, and the weights the report is made from)."""

    def __init__(self, minutes: float | None, elapsed: float = 0.0):
        if minutes is not None and not minutes > 0:
            raise ValueError(f"--max_time must be a positive number of minutes, got {minutes}")
        self.minutes, self.elapsed_before = minutes, elapsed
        self.started: float | None = None
        self.ended: float | None = None
        self.stopped_early = False

    def elapsed_seconds(self) -> float:
        """Seconds of training so far, earlier runs included."""
        if self.started is None:
            return self.elapsed_before
        return self.elapsed_before + (self.ended or time.perf_counter()) - self.started

    def state(self) -> dict:  # ExportableState: saved in every checkpoint's trainer_state.json
        return {"args": {"minutes": self.minutes}, "attributes": {"elapsed": self.elapsed_seconds()}}

    def on_train_begin(self, args, state, control, **kwargs):
        saved = (
            state.stateful_callbacks.get(type(self).__name__) if isinstance(state.stateful_callbacks, dict) else None
        )
        if isinstance(saved, dict):  # resumed: the checkpoint's trainer_state.json holds the minutes spent
            self.elapsed_before = float(saved.get("attributes", {}).get("elapsed", 0.0))
        self.started, self.ended = time.perf_counter(), None

    def on_train_end(self, args, state, control, **kwargs):
        self.ended = time.perf_counter()  # evaluation and saving after training are not training time

    def on_step_end(self, args, state, control, **kwargs):
        if self.minutes is None or control.should_training_stop:
            return control
        spent = self.elapsed_seconds() >= 60 * self.minutes
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            # Every process must stop at the same step (or the others wait forever in the next
            # all-reduce): stop when any of them has spent the budget.
            flag = torch.tensor([int(spent)], device=args.device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            spent = bool(flag.item())
        if spent:
            logger.info(
                "--max_time %.4g minutes reached at step %d: saving and stopping", self.minutes, state.global_step
            )
            control.should_training_stop = control.should_save = True
            self.stopped_early = state.global_step < state.max_steps
        return control


class ProgressReport(TrainerCallback):
    """Throughput and the held-out curve.

    `metrics()` (called at each log) gives, over the steps since the previous log: `tokens_per_second`
    (real input tokens / wall time, curve evaluations excluded), `input_fraction` (time fetching and
    collating / wall time; it must stay under 5% of a step), `eta_minutes` (to the step limit or the
    time budget, whichever comes first) and `elapsed_minutes`. Every `eval_steps` steps
    `evaluate()` runs on the held-out set and a line {step, tokens, elapsed_minutes, **metrics} is
    appended to `curve_path` (JSON lines).
    """

    def __init__(
        self,
        meter: InputMeter,
        budget: TimeBudget,
        evaluate: Callable[[], dict] | None = None,
        eval_steps: int | None = None,
        curve_path: Path | None = None,
    ):
        if eval_steps is not None and eval_steps < 1:
            raise ValueError(f"--eval_steps must be >= 1, got {eval_steps}")
        self.meter, self.budget, self.evaluate = meter, budget, evaluate
        self.eval_steps, self.curve_path = eval_steps, curve_path
        self.state = None  # the TrainerState: its num_input_tokens_seen counts the real tokens of every step
        self._mark: tuple[float, int, float, int] | None = None  # (time, step, input seconds, tokens) at the last log
        self._eval_seconds = 0.0
        self._start: tuple[float, float] | None = None  # (time, input seconds) when training began
        self._end: float | None = None
        self._all_eval_seconds = 0.0
        self.max_steps = 0
        self.step = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.max_steps, self.step = state.max_steps, state.global_step
        self.state = state
        self._mark = (time.perf_counter(), state.global_step, self.meter.seconds, self.tokens())
        self._start = (self._mark[0], self.meter.seconds)

    def on_train_end(self, args, state, control, **kwargs):
        self._end = time.perf_counter()

    def input_fraction(self) -> float | None:
        """The input pipeline's share of this process' training time (curve evaluations excluded)."""
        if self._start is None:
            return None
        wall = (self._end or time.perf_counter()) - self._start[0] - self._all_eval_seconds
        return (self.meter.seconds - self._start[1]) / max(wall, 1e-9)

    def tokens(self) -> int:
        """Real input tokens of the steps so far, earlier runs included (Trainer counts them when
        `include_num_input_tokens_seen` is "non_padding", and keeps the count in its checkpoints)."""
        return int(getattr(self.state, "num_input_tokens_seen", 0) or 0)

    def on_step_end(self, args, state, control, **kwargs):
        self.step = state.global_step
        if self.evaluate is not None and self.eval_steps and state.global_step % self.eval_steps == 0:
            self.record(state.global_step)
        return control

    def record(self, step: int, results: dict | None = None) -> dict:
        """Evaluate now (unless `results` are given) and append the curve line; the RNG state is
        left as it was (ELECTRA's generator samples: evaluating must not change training)."""
        if results is None:
            started = time.perf_counter()
            # every CUDA device's generator too: ELECTRA samples its replacements on the GPU
            with torch.random.fork_rng(devices=list(range(torch.cuda.device_count()))):
                results = self.evaluate()
            self._eval_seconds += time.perf_counter() - started
            self._all_eval_seconds += time.perf_counter() - started
        line = {"step": step, "tokens": self.tokens(), "elapsed_minutes": self.budget.elapsed_seconds() / 60, **results}
        if self.curve_path is not None:
            with open(self.curve_path, "a") as stream:
                stream.write(json.dumps(line) + "\n")
        logger.info(
            "step %d held-out: loss %.4f, masked-token accuracy %.4f",
            step,
            results.get("mlm_loss", float("nan")),
            results.get("mlm_accuracy", float("nan")),
        )
        return line

    def metrics(self) -> dict[str, float]:
        """Throughput since the previous call (see the class docstring); {} before training starts."""
        if self._mark is None:
            return {}
        now = time.perf_counter()
        then, step, seconds, tokens = self._mark
        wall = max(now - then - self._eval_seconds, 1e-9)
        steps = self.step - step
        self._mark, self._eval_seconds = (now, self.step, self.meter.seconds, self.tokens()), 0.0
        if steps <= 0:
            return {}
        left = (self.max_steps - self.step) * wall / steps
        if self.budget.minutes is not None:
            left = min(left, max(60 * self.budget.minutes - self.budget.elapsed_seconds(), 0.0))
        result = {
            "tokens_per_second": (self.tokens() - tokens) / wall,
            "input_fraction": (self.meter.seconds - seconds) / wall,
            "eta_minutes": left / 60,
            "elapsed_minutes": self.budget.elapsed_seconds() / 60,
        }
        logger.info(
            "step %d/%d: %.0f tokens/s, input pipeline %.1f%% of the step time, ETA %.1f min",
            self.step,
            self.max_steps,
            result["tokens_per_second"],
            100 * result["input_fraction"],
            result["eta_minutes"],
        )
        return result
