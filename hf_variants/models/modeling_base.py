"""The PreTrainedModel every shipped variant's models subclass: the shared blocks' base
(``hf_variants/modules/backbone.py``: attention backends, init, architecture check) plus how a
variant's checkpoints are loaded and saved.

- Loading (:class:`~hf_variants.conversion.hooks.CheckpointConversionMixin`,
  :class:`~hf_variants.persistence.RemoteCodeMixin`): ``from_pretrained`` reads the family's
  transformers checkpoints through the variant's key map, refuses a checkpoint that supplies
  (almost) none of the encoder's weights, and turns corrupt or mismatched files into a ValueError
  naming the file and the key (``hf_variants.hub.load_checks``).
- Saving: every ``save_pretrained`` (hence ``push_to_hub`` and Trainer's saves) writes our own
  weight names, atomically, with the self-contained remote code and ``auto_map``
  (``hf_variants.hub.remote_code``), so a saved or pushed checkpoint loads with
  ``trust_remote_code=True`` where hf-variants is not installed.

Both hooks import nothing of the package at import time: the remote-code export copies them next
to the modeling code, where they step aside.
"""

from __future__ import annotations

from ..conversion.hooks import CheckpointConversionMixin
from ..modules.backbone import TransformerPreTrainedModel
from ..persistence import RemoteCodeMixin


class VariantPreTrainedModel(CheckpointConversionMixin, RemoteCodeMixin, TransformerPreTrainedModel):
    """:class:`TransformerPreTrainedModel` with checked, converting loads and atomic saves with remote
    code. A variant's ``XPreTrainedModel`` subclasses it (the hooks come first in the bases)."""
