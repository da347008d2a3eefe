"""Publishing hf-variants checkpoints: model cards, remote-code export and pushes to the Hub."""

from .card import DatasetInfo, RunSummary, build_model_card
from .run_record import rebuild_model_card, write_model_card
from .variants import VARIANTS, VariantInfo, variant_info, variant_name

__all__ = [
    "VARIANTS",
    "DatasetInfo",
    "RunSummary",
    "VariantInfo",
    "build_model_card",
    "rebuild_model_card",
    "variant_info",
    "variant_name",
    "write_model_card",
]
