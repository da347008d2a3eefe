"""The PreTrainedModel every shipped variant's models subclass, :class:`VariantPreTrainedModel`:
transformers' ``PreTrainedModel`` with the settings every variant shares (attention backends, the
init of the shared blocks' own parameters, the config's architecture check) plus how a variant's
checkpoints are loaded and saved.

Loading:

- :class:`CheckpointConversionMixin`: ``from_pretrained`` reads the family's transformers
  checkpoints (weights renamed by transformers itself, from the conversion mapping each variant
  registers: :func:`hf_variants.conversion.register_weights`), and refuses a checkpoint that
  supplies (almost) none of the encoder's weights rather than returning random weights with a log
  line (``hf_variants.conversion.loading``).
- :class:`RemoteCodeMixin`: a truncated or corrupted checkpoint, wrong shapes or dtypes, missing or
  extra weights or pickled weights raise a ValueError naming the file and the key
  (``hf_variants.hub.load_checks``).

Saving (every ``save_pretrained``, hence ``model.push_to_hub``, Trainer's saves and
``Trainer.push_to_hub``):

- our own weight names, even when the weights came from a transformers checkpoint (transformers
  would otherwise undo the load-time renames);
- atomic: the weights, config and code are written into a temporary folder beside the target and
  moved into place only once complete (``hf_variants.hub.atomic``), so a full disk, an exception or a
  kill while saving leaves the folder's previous checkpoint loadable; other files in the folder (a
  tokenizer, a Trainer's checkpoint-* folders) are kept;
- with the checkpoint's self-contained remote code and ``auto_map`` (``hf_variants.hub.remote_code``),
  so a saved or pushed checkpoint loads with ``trust_remote_code=True`` where hf-variants is not
  installed.

The remote-code export inlines this module into the checkpoint's ``modeling_<v>.py``: it imports
only the blocks at import time and loads the conversion, checking and publishing code by name when
a model is loaded or saved (so the export, which follows imports, leaves that code out). In such a
copy (module name not under ``hf_variants.``) both hooks step aside, so re-saving a model loaded with ``trust_remote_code=True`` falls back to transformers' own
custom-code saving.
"""

from __future__ import annotations

import importlib
import os

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init

from ..modules.heads import MaskedLMHead
from ..modules.norms import RMSNorm

_IN_PACKAGE = __name__.startswith("hf_variants.")


class CheckpointConversionMixin:
    """``from_pretrained`` through the variant's key map, refusing another architecture's checkpoint;
    ``save_pretrained`` in our format."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        if not _IN_PACKAGE:
            return super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)
        loading = importlib.import_module("hf_variants.conversion.loading")
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


class RemoteCodeMixin:
    """Checked loads; atomic saves that also write the checkpoint's remote code and ``auto_map``."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """transformers' from_pretrained, with a ValueError naming the file and the key for a
        truncated/corrupted checkpoint, wrong shapes or dtypes, missing or extra weights, and no
        pickled weights (`hf_variants.hub.load_checks`)."""
        load = super().from_pretrained
        if not _IN_PACKAGE:
            return load(pretrained_model_name_or_path, *args, **kwargs)
        checks = importlib.import_module("hf_variants.hub.load_checks")
        return checks.checked_from_pretrained(load, cls, pretrained_model_name_or_path, args, kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs):
        if not _IN_PACKAGE or not kwargs.get("is_main_process", True):
            return super().save_pretrained(save_directory, *args, **kwargs)
        if kwargs.get("push_to_hub"):  # transformers names the repo after the folder it writes
            kwargs.setdefault("repo_id", os.path.basename(os.path.normpath(os.fspath(save_directory))))
        atomic = importlib.import_module("hf_variants.hub.atomic")
        stale_in = importlib.import_module("hf_variants.hub.checkpoints").stale_in
        export_remote_code = importlib.import_module("hf_variants.hub.remote_code").export_remote_code
        # A variant defined outside the package (a user's own experiment) has no package source to
        # copy: it saves without remote code.
        defined_in_package = type(self).__module__.startswith("hf_variants.")
        with atomic.staged_directory(save_directory, stale=stale_in(save_directory)) as staging:
            result = super().save_pretrained(staging, *args, **kwargs)
            if defined_in_package:
                export_remote_code(staging)
        return result


class VariantPreTrainedModel(CheckpointConversionMixin, RemoteCodeMixin, PreTrainedModel):
    """transformers' ``PreTrainedModel`` with the settings every variant shares (attention backends,
    the init of the shared blocks' own parameters, the config's architecture check), converting and
    checked loads, and atomic saves with remote code. A variant's ``XPreTrainedModel`` subclasses it
    and names its repeated block in ``_no_split_modules``."""

    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = False
    _supports_flex_attn = False
    # Our losses are means over the local batch: Trainer must not rescale them by num_items_in_batch
    # (it would double-count under DDP and gradient accumulation).
    accepts_loss_kwargs = False
    main_input_name = "input_ids"
    # Every forward names what it takes in its own source (no signature is rewritten): Trainer keeps
    # only the dataset columns a forward's signature names, and peft passes ``past_key_values`` (a
    # decoder's cache, or an encoder's key/value prefix for prefix tuning) only to a forward that
    # names it. tests/test_model_shape.py checks both.

    def __init__(self, config, *args, **kwargs) -> None:
        config.check_architecture()  # a clear ValueError naming the fields, before any module is built
        super().__init__(config, *args, **kwargs)

    def _initialize_weights(self, module: nn.Module, is_custom_code: bool = False) -> None:
        # transformers' path for its own models, not the one for custom code: that one skips every
        # module without parameters of its own (attention, FFN, embedding containers) and with it
        # every container-level init (T5's unit-variance embeddings and fan-in projections were
        # silently 0.02). Safe because every _init_weights here writes through
        # transformers.initialization, which leaves weights loaded from a checkpoint alone.
        super()._initialize_weights(module, is_custom_code=False)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Runs children first, then their container: a container's init overrides its leaves'."""
        super()._init_weights(module)
        if isinstance(module, MaskedLMHead):
            init.zeros_(module.decoder.bias)
        elif isinstance(module, RMSNorm):
            init.ones_(module.weight)

    @property
    def attention_backend(self) -> str:
        """ "eager" or "sdpa" (the default), from ``attn_implementation``."""
        return "eager" if self.config._attn_implementation == "eager" else "sdpa"
