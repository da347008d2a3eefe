"""The two hooks that make ``from_pretrained`` read other formats of a variant's checkpoints.

- :class:`CheckpointConfigMixin` (first in a config class's bases): ``OurConfig.from_pretrained``
  of a transformers config.json ("bert") translates it into ours instead of keeping
  ``model_type="bert"`` on an hf-variants config, and refuses unrelated model types.
- :class:`CheckpointConversionMixin` (first in a PreTrainedModel's bases): ``from_pretrained``
  refuses a checkpoint that supplies (almost) none of the encoder's weights, rather than returning
  random weights with a log line; ``save_pretrained`` writes our own format even when the weights
  came from a transformers checkpoint (transformers would otherwise undo the load-time renames).

The weight renames themselves are transformers' own mechanism, registered per model_type by
:func:`hf_variants.conversion.register_weights`.

Like ``hf_variants/persistence.py``, this module imports nothing from the package at import time: the
remote-code export copies it next to the modeling code, and in such a copy (module name not
under ``hf_variants.``) both hooks step aside.
"""

from __future__ import annotations

import importlib
import os

_IN_PACKAGE = __name__.startswith("hf_variants.")


def _loading():
    return importlib.import_module("hf_variants.conversion.loading")


class CheckpointConfigMixin:
    @classmethod
    def get_config_dict(cls, pretrained_model_name_or_path, **kwargs):
        config_dict, kwargs = super().get_config_dict(pretrained_model_name_or_path, **kwargs)
        if _IN_PACKAGE:
            config_dict = _loading().translate_config_dict(cls, config_dict, pretrained_model_name_or_path)
        return config_dict, kwargs


class CheckpointConversionMixin:
    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        if not _IN_PACKAGE:
            return super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)
        loading = _loading()
        loader = loading.class_for_loading(cls)  # cls, unless its name would pick transformers' renames
        load = super(CheckpointConversionMixin, loader).from_pretrained
        result = loading.load_checked(loader, load, pretrained_model_name_or_path, *model_args, **kwargs)
        model = result[0] if isinstance(result, tuple) else result
        model.__class__ = cls  # the loading subclass adds nothing: give back the class asked for
        return result

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs):
        # Our state dict names are our format; transformers' default (save_original_format=True)
        # would rename them back to the names of whatever checkpoint the weights were loaded from.
        kwargs.setdefault("save_original_format", False)
        return super().save_pretrained(save_directory, *args, **kwargs)
