"""What a variant's paper contributes to its model card: :class:`VariantInfo`.

Each variant keeps its own paper text in its folder (``models/<variant>/paper.py``) and names it
in its spec (``SPEC.paper``); the model card reads it from there. ``hf_variants.papers.BERT`` (the
variant's folder name in capitals) still finds a variant's paper, through its spec.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VariantInfo:
    display_name: str
    description: str  # one paragraph: what the variant changes and why
    paper_title: str
    paper_url: str
    bibtex: str


def __getattr__(name: str) -> VariantInfo:
    """``papers.BERT`` -> the paper of the variant in folder ``bert`` (``papers.TRANSFO_XL``: transfo_xl)."""
    if not name.isupper():
        raise AttributeError(name)
    from .registry import SPECS  # registered by ``import hf_variants``; imported late: the registry imports this module

    spec = next((spec for spec in SPECS.values() if spec.name == name.lower()), None)
    if spec is None:
        raise AttributeError(f"no registered variant {name.lower()!r} has a paper; registered: {sorted(s.name for s in SPECS.values())}")
    return spec.paper
