"""Entity-level scores of tag sequences: a shortcut over the shipped ``seqeval`` evaluate module."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from .loading import load_metric


def seqeval_scores(
    true_tags: Sequence[Sequence[str]],
    predicted_tags: Sequence[Sequence[str]],
    scheme: str = "IOB2",
    mode: str = "default",
) -> dict:
    """The ``seqeval`` metric's dict (per entity type ``{"precision", "recall", "f1", "number"}``
    plus ``overall_*``). ``mode="strict"`` applies ``scheme``'s rules ("IOB1", "IOB2", "IOBES",
    "BILOU", ...); the default mode is conlleval's lenient chunking (scheme unused). Undefined
    scores (nothing predicted or nothing to find) are 0."""
    if mode not in ("default", "strict"):
        raise ValueError(f"mode must be 'default' or 'strict', got {mode!r}")
    strict = {"mode": "strict"} if mode == "strict" else {}  # the scheme is checked in both modes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on undefined (zero-division) scores
        return load_metric("seqeval").compute(
            predictions=[list(tags) for tags in predicted_tags],
            references=[list(tags) for tags in true_tags],
            zero_division=0,
            scheme="IOBES" if scheme == "BIOES" else scheme,
            **strict,
        )
