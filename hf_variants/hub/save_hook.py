"""`RemoteCodeMixin`: every `save_pretrained` (hence `model.push_to_hub` and Trainer's saves and
`Trainer.push_to_hub`) also writes the checkpoint's remote code and `auto_map`.

Use it first in a variant's PreTrainedModel bases. This module imports nothing from the package at
import time because the remote-code export copies it too (as `hfv_hub_save_hook.py`); in such a copy
(module name not under `hf_variants.`) the hook does nothing, so re-saving a model loaded with
`trust_remote_code=True` falls back to transformers' own custom-code saving.
"""

from __future__ import annotations

import importlib
import os


class RemoteCodeMixin:
    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs):
        result = super().save_pretrained(save_directory, *args, **kwargs)
        # A variant defined outside the package (a user's own experiment) has no package source to
        # copy: it saves without remote code.
        defined_in_package = type(self).__module__.startswith("hf_variants.")
        if __name__.startswith("hf_variants.") and defined_in_package and kwargs.get("is_main_process", True):
            importlib.import_module("hf_variants.hub.remote_code").export_remote_code(save_directory)
        return result
