"""Trainer checkpoints that are complete or absent, and resuming only from complete ones.

`AtomicCheckpointsMixin` (put it before `transformers.Trainer` in a Trainer subclass's bases; the
example scripts' Trainer has it) makes every save of a Trainer atomic:

- a checkpoint (`checkpoint-<step>/`: weights, optimizer, scheduler, RNG states of every process,
  trainer_state.json) is written by all processes into one temporary folder beside it and renamed
  into place by the main process once every process has finished writing;
- `save_model` (the final model + tokenizer + training_args.bin in output_dir) goes through the
  same staging, keeping the output_dir's other files (checkpoint-* folders, results JSON);
- `save_state` and `save_metrics` replace trainer_state.json and the results JSON files each in
  one rename.

`last_complete_checkpoint` picks the newest `checkpoint-*` folder that can really be resumed from
and names, in a warning, the incomplete ones it skips (left by a kill before atomic saves, by a
full disk on a filesystem without atomic renames, or copied half-way by hand).
`Trainer.train(resume_from_checkpoint=True | "last")` goes through it, and an explicit incomplete
checkpoint path is refused with a ValueError that says what is missing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import shutil
import struct
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .atomic import publish, remove_leftover_staging, replace_atomically, staging_path, write_text_atomically
from .remote_code import GENERATED_MARKER, is_generated_code_file

logger = logging.getLogger(__name__)

CHECKPOINT_FOLDER = re.compile(r"^checkpoint-(\d+)$")
TRAINER_STATE = "trainer_state.json"
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "adapter_model.safetensors",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "adapter_model.bin",
)
TORCH_SAVE_SUFFIXES = (".pt", ".pth", ".bin")  # torch.save files: zip archives since torch 1.6
STAGING_TAG = "trainer"  # all processes of a run write into the same staging folder
# Files a new save_pretrained makes obsolete when it does not write them itself: weights of an
# older save (single file, shards, shard index; any `variant`) and the generated remote code
# (`configuration_<v>.py` / `modeling_<v>.py`, or the per-module `hfv_*.py` of older exports).
STALE_WEIGHTS_FILE = re.compile(r"^model(\.[\w-]+)?(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?$")


def is_stale_save_file(name: str, folder: str | os.PathLike | None = None) -> bool:
    """Whether a file left in a folder by an earlier save is replaced by a new ``save_pretrained``
    (``RemoteCodeMixin``'s and Trainer's saves drop it when the new save does not write it). With
    ``folder``, a code file counts only when it is generated code (its first line says so): a
    hand-written ``modeling_x.py`` beside the weights is kept."""
    if STALE_WEIGHTS_FILE.match(name):
        return True
    if not is_generated_code_file(name):
        return False
    if folder is None:
        return True
    try:
        with open(Path(folder) / name, encoding="utf-8") as f:
            return f.readline().startswith(GENERATED_MARKER)
    except (OSError, UnicodeDecodeError):
        return False


def stale_in(folder: str | os.PathLike) -> Callable[[str], bool]:
    """:func:`is_stale_save_file` for the files of ``folder`` (the ``stale`` of a staged save)."""
    return functools.partial(is_stale_save_file, folder=folder)


def safetensors_problem(path: str | os.PathLike) -> str | None:
    """Why a .safetensors file is unreadable (truncated, corrupted header), or None. Reads only
    the header: the file's size must be exactly what the header's offsets describe."""
    path = Path(path)
    size = path.stat().st_size
    if size < 8:
        return f"{size} bytes, shorter than the 8-byte safetensors header length"
    with open(path, "rb") as handle:
        (header_length,) = struct.unpack("<Q", handle.read(8))
        if 8 + header_length > size:
            return f"truncated or corrupted (a header of {header_length} bytes in a file of {size})"
        try:
            header = json.loads(handle.read(header_length))
        except (UnicodeDecodeError, ValueError):
            return "corrupted safetensors header (not JSON)"
    if not isinstance(header, dict):
        return "corrupted safetensors header (not a JSON object)"
    data_end = 0
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            return f"corrupted safetensors header (entry {key!r} has no valid data_offsets)"
        if not {"dtype", "shape"} <= set(entry):
            return f"corrupted safetensors header (entry {key!r} has no dtype or shape)"
        data_end = max(data_end, offsets[1])
    if 8 + header_length + data_end != size:
        return f"truncated or corrupted ({size} bytes; its header describes {8 + header_length + data_end})"
    return None


def checkpoint_problems(folder: str | os.PathLike) -> list[str]:
    """What keeps a Trainer checkpoint folder from being resumed; empty when it is complete.

    Complete: a readable trainer_state.json, model weights (every shard of an index), every
    safetensors file whole, every torch.save file (optimizer, scheduler, RNG states) a whole zip
    archive (the end-of-archive record is what a cut-short file lacks).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder} is not a directory"]
    names = set(os.listdir(folder))
    problems = []
    if TRAINER_STATE not in names:
        problems.append(f"no {TRAINER_STATE}")
    else:
        try:
            json.loads((folder / TRAINER_STATE).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError):
            problems.append(f"{TRAINER_STATE} is not valid JSON")
    if not names & set(WEIGHT_FILES):
        problems.append("no model weights (model.safetensors)")
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if index_name in names:
            try:
                shards = set(json.loads((folder / index_name).read_text(encoding="utf-8"))["weight_map"].values())
            except (UnicodeDecodeError, ValueError, KeyError, AttributeError):
                problems.append(f"{index_name} is not a valid shard index")
                continue
            problems += [f"shard {shard} listed in {index_name} is missing" for shard in sorted(shards - names)]
    for name in sorted(names):
        if name.endswith(".safetensors"):
            problem = safetensors_problem(folder / name)
            if problem:
                problems.append(f"{name}: {problem}")
        elif name.endswith(TORCH_SAVE_SUFFIXES) and not zipfile.is_zipfile(folder / name):
            problems.append(f"{name} is truncated or not a torch.save archive")
    return problems


def checkpoint_folders(output_dir: str | os.PathLike) -> list[Path]:
    """The ``checkpoint-<step>`` folders of ``output_dir``, newest (highest step) first."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    found = [
        (int(match.group(1)), output_dir / name)
        for name in os.listdir(output_dir)
        if (match := CHECKPOINT_FOLDER.match(name)) and (output_dir / name).is_dir()
    ]
    return [path for _, path in sorted(found, reverse=True)]


def last_complete_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The newest complete ``checkpoint-*`` folder of ``output_dir`` (None if there is none);
    newer incomplete ones are skipped with a warning naming them and what they lack."""
    for folder in checkpoint_folders(output_dir):
        problems = checkpoint_problems(folder)
        if not problems:
            return str(folder)
        logger.warning(
            "skipping the incomplete checkpoint %s (%s); resuming from an older one if any", folder, "; ".join(problems)
        )
    return None


def resolve_checkpoint(requested: str | bool | None, output_dir: str | os.PathLike) -> str | None:
    """The folder ``--resume_from_checkpoint`` means: ``True``/"true"/"last" -> the newest complete
    checkpoint in ``output_dir``; a path -> that folder, checked complete; None/False -> None.

    Raises:
        ValueError: nothing complete to resume from, or the folder given is incomplete (the message
            names it and what is missing).
    """
    if requested is None or requested is False:
        return None
    if requested is True or str(requested).lower() in ("true", "last"):
        last = last_complete_checkpoint(output_dir)
        if last is None:
            found = [folder.name for folder in checkpoint_folders(output_dir)]
            raise ValueError(
                f"--resume_from_checkpoint {requested}: no complete checkpoint-* folder in {output_dir}"
                + (f" (incomplete: {', '.join(found)})" if found else "")
            )
        return last
    if not os.path.isdir(requested):
        raise ValueError(f"--resume_from_checkpoint {requested} is not a directory")
    problems = checkpoint_problems(requested)
    if problems:
        raise ValueError(f"cannot resume from {requested}: the checkpoint is incomplete ({'; '.join(problems)})")
    return str(requested)


class AtomicCheckpointsMixin:
    """Atomic checkpoints and saves for `transformers.Trainer` (see the module docstring)."""

    _checkpoint_staging: Path | None = None

    def train(self, resume_from_checkpoint: str | bool | None = None, *args, **kwargs):
        if resume_from_checkpoint is not None and resume_from_checkpoint is not False:
            resume_from_checkpoint = resolve_checkpoint(resume_from_checkpoint, self.args.output_dir)
        return super().train(resume_from_checkpoint, *args, **kwargs)

    @contextlib.contextmanager
    def _staged_for_every_process(self, target: Path, stale=None) -> Iterator[Path]:
        """A staging folder beside ``target`` that every process writes into; the main process
        publishes it once all are done. An exception in one process ends the job (the launcher
        stops the others), leaving the target as it was."""
        staging = staging_path(target, STAGING_TAG)
        if self.args.should_save:
            if staging.exists():  # left by a killed run
                shutil.rmtree(staging)
            staging.mkdir(parents=True)
        self.accelerator.wait_for_everyone()
        try:
            yield staging
        except BaseException:
            if self.args.world_size == 1:  # with several processes the next save removes it
                shutil.rmtree(staging, ignore_errors=True)
            raise
        self.accelerator.wait_for_everyone()
        if self.args.should_save:
            publish(staging, target, stale=stale)
        self.accelerator.wait_for_everyone()

    def _save_checkpoint(self, model, trial) -> None:
        run_dir = Path(os.path.realpath(self._get_output_dir(trial=trial)))
        name = f"checkpoint-{self.state.global_step}"
        target = run_dir / name
        # Trainer writes a checkpoint into <its output dir>/checkpoint-<step>: for the length of the
        # call its output dir is a staging folder beside the target, from which the finished
        # checkpoint is renamed into place.
        holder = staging_path(target, STAGING_TAG)
        if self.args.should_save:
            remove_leftover_staging(run_dir, prefix=".checkpoint-")  # left by a killed run
            holder.mkdir(parents=True)
        self.accelerator.wait_for_everyone()
        self._checkpoint_staging = holder
        try:
            super()._save_checkpoint(model, trial)
        except BaseException:
            if self.args.world_size == 1:  # with several processes the next save removes it
                shutil.rmtree(holder, ignore_errors=True)
            raise
        finally:
            self._checkpoint_staging = None
        self.accelerator.wait_for_everyone()  # every process has written its files (RNG states)
        if self.args.should_save:
            self._point_best_checkpoint_at(run_dir, holder / name)
            publish(holder / name, target)
            os.rmdir(holder)
            from transformers.trainer_utils import rotate_checkpoints

            rotate_checkpoints(
                output_dir=str(run_dir),
                save_total_limit=self.args.save_total_limit,
                best_model_checkpoint=self.state.best_model_checkpoint,
                use_mtime=True,
            )
        self.accelerator.wait_for_everyone()
        if self.args.push_to_hub:
            super()._push_from_checkpoint(str(target))

    def _get_output_dir(self, trial) -> str:
        if self._checkpoint_staging is not None:
            return str(self._checkpoint_staging)
        return super()._get_output_dir(trial=trial)

    def _push_from_checkpoint(self, checkpoint_folder: str) -> None:
        if self._checkpoint_staging is None:  # called again, from the published folder, after the rename
            super()._push_from_checkpoint(checkpoint_folder)

    def _point_best_checkpoint_at(self, run_dir: Path, staged: Path) -> None:
        """Trainer looked for the best checkpoint in the staging folder: look in the real run dir
        and rewrite the staged trainer_state.json with the real path."""
        best_step = self.state.best_global_step
        if not best_step:
            return
        best = run_dir / f"checkpoint-{best_step}"
        if best_step == self.state.global_step or best.is_dir():
            self.state.best_model_checkpoint = str(best)
            if (staged / TRAINER_STATE).is_file():
                self.state.save_to_json(str(staged / TRAINER_STATE))

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        if self._checkpoint_staging is not None:  # inside a checkpoint: already staged
            return super().save_model(output_dir, _internal_call)
        target = Path(os.path.realpath(output_dir or self.args.output_dir))
        with self._staged_for_every_process(target, stale=stale_in(target)) as staging:
            super().save_model(str(staging), _internal_call)

    def save_metrics(self, split: str, metrics: dict, combined: bool = True) -> None:
        """transformers' files (``<split>_results.json``, merged into all_results.json), each
        replaced in one rename; an all_results.json a killed run left unreadable is started anew."""
        if not self.is_world_process_zero():
            return
        output_dir = Path(self.args.output_dir)
        write_text_atomically(output_dir / f"{split}_results.json", json.dumps(metrics, indent=4, sort_keys=True))
        if combined:
            combined_path = output_dir / "all_results.json"
            everything = {}
            if combined_path.is_file():
                try:
                    everything = json.loads(combined_path.read_text(encoding="utf-8"))
                except (UnicodeDecodeError, ValueError):
                    logger.warning("%s was unreadable (cut short by an earlier crash?): writing it anew", combined_path)
            everything.update(metrics)
            write_text_atomically(combined_path, json.dumps(everything, indent=4, sort_keys=True))

    def save_state(self) -> None:
        if self.args.should_save:
            path = os.path.join(self.args.output_dir, TRAINER_STATE)
            replace_atomically(path, self.state.save_to_json)
