"""How every model is saved and loaded: `RemoteCodeMixin`. Every `save_pretrained` (hence `model.push_to_hub` and Trainer's saves and
`Trainer.push_to_hub`) is atomic and also writes the checkpoint's remote code and `auto_map`;
every `from_pretrained` checks what it loads (`hf_variants.hub.load_checks`).

Atomic: the weights, config and code are written into a temporary folder beside the target and
moved into place only once complete (`hf_variants.atomic`), so a full disk, an exception or a kill
while saving leaves the folder's previous checkpoint loadable; other files in the folder (a
tokenizer, a Trainer's checkpoint-* folders) are kept.

It lives outside `hub/` on purpose: `hf_variants.models.modeling_base.VariantPreTrainedModel` (every
variant's base) uses it without importing the publishing code, which is loaded by name only when a
model is saved or loaded.

Use it first in a PreTrainedModel's bases (`VariantPreTrainedModel` does). This module imports nothing from the package at
import time because the remote-code export copies it too (as `hfv_persistence.py`); in such a copy
(module name not under `hf_variants.`) the hook does nothing, so re-saving a model loaded with
`trust_remote_code=True` falls back to transformers' own custom-code saving.
"""

from __future__ import annotations

import importlib
import os


class RemoteCodeMixin:
    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """transformers' from_pretrained, with a ValueError naming the file and the key for a
        truncated/corrupted checkpoint, wrong shapes or dtypes, missing or extra weights, and no
        pickled weights (`hf_variants.hub.load_checks`)."""
        load = super().from_pretrained
        if not __name__.startswith("hf_variants."):
            return load(pretrained_model_name_or_path, *args, **kwargs)
        checks = importlib.import_module("hf_variants.hub.load_checks")
        return checks.checked_from_pretrained(load, cls, pretrained_model_name_or_path, args, kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs):
        if not __name__.startswith("hf_variants.") or not kwargs.get("is_main_process", True):
            return super().save_pretrained(save_directory, *args, **kwargs)
        if kwargs.get("push_to_hub"):  # transformers names the repo after the folder it writes
            kwargs.setdefault("repo_id", os.path.basename(os.path.normpath(os.fspath(save_directory))))
        atomic = importlib.import_module("hf_variants.atomic")
        is_stale_save_file = importlib.import_module("hf_variants.hub.checkpoints").is_stale_save_file
        export_remote_code = importlib.import_module("hf_variants.hub.remote_code").export_remote_code
        # A variant defined outside the package (a user's own experiment) has no package source to
        # copy: it saves without remote code.
        defined_in_package = type(self).__module__.startswith("hf_variants.")
        with atomic.staged_directory(save_directory, stale=is_stale_save_file) as staging:
            result = super().save_pretrained(staging, *args, **kwargs)
            if defined_in_package:
                export_remote_code(staging)
        return result
