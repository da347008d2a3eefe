"""A registered variant's paper by name: ``hf_variants.models.papers.BERT`` (the variant's folder
name in capitals) is the :class:`~hf_variants.registry.VariantInfo` its spec names (``SPEC.paper``).

Each variant keeps its own paper text in its folder (``models/<variant>/paper.py``); the model card
reads it through the spec (``hf_variants.hub.variants``). This module only looks it up by name.
"""

from __future__ import annotations

from ..registry import SPECS, VariantInfo

__all__ = ["VariantInfo"]


def __getattr__(name: str) -> VariantInfo:
    """``papers.BERT`` -> the paper of the variant in folder ``bert`` (``papers.TRANSFO_XL``: transfo_xl)."""
    if not name.isupper():
        raise AttributeError(name)
    spec = next((spec for spec in SPECS.values() if spec.name == name.lower()), None)
    if spec is None:
        raise AttributeError(
            f"no registered variant {name.lower()!r} has a paper; registered: {sorted(s.name for s in SPECS.values())}"
        )
    return spec.paper
