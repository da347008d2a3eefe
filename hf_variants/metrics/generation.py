"""Scores for generated text compared word by word with a reference: exact match (sequence
accuracy: the sentiment word, a whole pronunciation) and the token error rate, the Levenshtein
distance between whitespace-split token sequences over the reference length (the phoneme error
rate of grapheme-to-phoneme work, the word error rate of speech recognition, 1 - tag accuracy for
tagging as text when lengths agree).
"""

from __future__ import annotations

from collections.abc import Sequence


def edit_distance(reference: Sequence, hypothesis: Sequence) -> int:
    """Fewest insertions, deletions and substitutions turning ``hypothesis`` into ``reference``."""
    previous = list(range(len(hypothesis) + 1))
    for row, wanted in enumerate(reference, start=1):
        current = [row]
        for column, given in enumerate(hypothesis, start=1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (wanted != given)))
        previous = current
    return previous[-1]


def sequence_scores(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Exact match and token error rate in percent, over whitespace-split tokens.

    Returns ``{"exact_match": 100 * share of predictions equal to their reference token for
    token, "token_error_rate": 100 * total edit distance / total reference tokens}``.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    if not references:
        raise ValueError("no references to score against")
    exact, errors, reference_tokens = 0, 0, 0
    for prediction, reference in zip(predictions, references):
        predicted, wanted = prediction.split(), reference.split()
        exact += predicted == wanted
        errors += edit_distance(wanted, predicted)
        reference_tokens += len(wanted)
    if reference_tokens == 0:
        raise ValueError("every reference is empty: the token error rate is undefined")
    return {"exact_match": 100.0 * exact / len(references), "token_error_rate": 100.0 * errors / reference_tokens}
