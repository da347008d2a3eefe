"""Saving, checking and publishing hf-variants checkpoints: atomic folder and file writes
(``atomic.py``), atomic Trainer checkpoints, checks on loading, remote-code export, model cards and
pushes to the Hub. The hooks every model saves and loads through (``hf_variants.models.modeling_base``)
stand above this package: they load these modules by name when a model is saved or loaded."""

from .card import DatasetInfo, RunSummary, build_model_card
from .checkpoints import AtomicCheckpointsMixin, checkpoint_problems, last_complete_checkpoint
from .push import PushError, PushResult, push_model_dir
from .remote_code import export_remote_code
from .run_record import rebuild_model_card, write_model_card
from .variants import VariantInfo, variant_info, variant_name

__all__ = [
    "AtomicCheckpointsMixin",
    "DatasetInfo",
    "PushError",
    "PushResult",
    "RunSummary",
    "VariantInfo",
    "build_model_card",
    "checkpoint_problems",
    "export_remote_code",
    "last_complete_checkpoint",
    "push_model_dir",
    "rebuild_model_card",
    "variant_info",
    "variant_name",
    "write_model_card",
]
