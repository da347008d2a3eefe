"""What each variant is, for model cards: one paragraph and the paper to cite, read from the
variant's spec (``models/<variant>/__init__.py`` names its paper, kept in ``models/<variant>/paper.py``).

A config's `model_type` maps to its variant with `variant_name()` ("hfv_bert" -> "bert"), so the
card code stays generic over variants.
"""

from __future__ import annotations

import logging

from ..registry import MODEL_TYPE_PREFIX, SPECS, VariantInfo

logger = logging.getLogger(__name__)


def variant_name(model_type: str) -> str:
    """The variant a config's `model_type` belongs to: "hfv_spanbert" -> "spanbert"."""
    return model_type[len(MODEL_TYPE_PREFIX) :] if model_type.startswith(MODEL_TYPE_PREFIX) else model_type


def variant_info(model_type: str) -> VariantInfo | None:
    """The card paragraph and citation for `model_type`, or None (logged) for an unregistered variant."""
    spec = SPECS.get(MODEL_TYPE_PREFIX + variant_name(model_type))
    info = None if spec is None else spec.paper
    if info is None:
        logger.warning(
            "No variant with model_type %r is registered: its card has no description or citation", model_type
        )
    return info
