"""SQuAD v1.1 / v2.0 exact match and F1, following the official evaluation scripts' logic.

Answers are normalised (lower case, punctuation removed, the articles a/an/the removed,
whitespace collapsed) and compared as bags of tokens; each prediction takes its best score over
the gold answers. SQuAD 2.0 adds unanswerable questions: the gold is then the empty string, so
only an empty prediction scores 1; results are broken down into HasAns/NoAns, and ``best_*`` are
the scores at the best no-answer-probability threshold.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop articles, collapse whitespace (official order)."""
    text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, version_2: bool = True) -> float:
    """Token-overlap F1 of the normalised strings. When one side normalises to nothing, SQuAD
    2.0 scores 1.0 if both do (a correct "no answer") and 0.0 otherwise; SQuAD 1.1 scores 0.0."""
    prediction_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if version_2 and (not prediction_tokens or not gold_tokens):
        return float(prediction_tokens == gold_tokens)
    overlap = sum((Counter(prediction_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _gold_answers(reference: Mapping, version_2: bool) -> list[str]:
    texts = list(reference["answers"]["text"])
    if not version_2:
        if not texts:
            raise ValueError(
                f"question {reference['id']!r} has no gold answer; use version_2_with_negative=True for SQuAD 2.0 data"
            )
        return texts
    # SQuAD 2.0 script: gold answers that normalise to nothing do not count; none left = no answer.
    texts = [text for text in texts if normalize_answer(text)]
    return texts or [""]


def _best_threshold(
    predictions: dict[str, str],
    scores: dict[str, float],
    no_answer_probabilities: dict[str, float],
    has_answer: dict[str, bool],
) -> tuple[float, float]:
    """Score (percent) and threshold when every question with no-answer probability above the
    threshold is answered "no answer" (the official script's ``find_best_thresh``)."""
    current = best = float(sum(not answerable for answerable in has_answer.values()))
    best_threshold = 0.0
    for question_id in sorted(no_answer_probabilities, key=no_answer_probabilities.get):
        if has_answer[question_id]:
            current += scores[question_id]
        else:
            current -= 1.0 if predictions[question_id] else 0.0
        if current > best:
            best, best_threshold = current, no_answer_probabilities[question_id]
    return 100.0 * best / len(scores), float(best_threshold)


def squad_scores(
    predictions: Sequence[Mapping],
    references: Sequence[Mapping],
    version_2_with_negative: bool = False,
    no_answer_threshold: float = 1.0,
) -> dict[str, float | int]:
    """SQuAD scores in percent, in the ``evaluate`` library's format.

    predictions: ``[{"id", "prediction_text"}]`` (+ ``"no_answer_probability"`` for v2, default 0).
    references: ``[{"id", "answers": {"text": [...], "answer_start": [...]}}]``.
    v1 returns ``{"exact_match", "f1"}``; v2 returns ``{"exact", "f1", "total", "HasAns_exact",
    "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total", "best_exact",
    "best_exact_thresh", "best_f1", "best_f1_thresh"}`` (a HasAns/NoAns group is left out when
    it has no question; ``*_total`` are ints, everything else floats). In v2 a question whose
    no-answer probability exceeds ``no_answer_threshold`` counts as answered "no answer".
    """
    predicted_text = {prediction["id"]: prediction["prediction_text"] for prediction in predictions}
    if not references:
        raise ValueError("cannot score an empty set of references")
    missing = [reference["id"] for reference in references if reference["id"] not in predicted_text]
    if missing:
        raise ValueError(f"{len(missing)} questions have no prediction, e.g. {missing[:3]}")

    exact: dict[str, float] = {}
    f1: dict[str, float] = {}
    has_answer: dict[str, bool] = {}
    for reference in references:
        question_id = reference["id"]
        golds = _gold_answers(reference, version_2_with_negative)
        has_answer[question_id] = golds != [""]
        exact[question_id] = max(exact_match_score(predicted_text[question_id], gold) for gold in golds)
        f1[question_id] = max(f1_score(predicted_text[question_id], gold, version_2_with_negative) for gold in golds)
    if not version_2_with_negative:
        return {"exact_match": 100.0 * sum(exact.values()) / len(exact), "f1": 100.0 * sum(f1.values()) / len(f1)}

    no_answer_probabilities = {
        prediction["id"]: float(prediction.get("no_answer_probability", 0.0))
        for prediction in predictions
        if prediction["id"] in has_answer
    }
    # The best-threshold search starts from the scores before any threshold (official script).
    raw_exact, raw_f1 = dict(exact), dict(f1)
    for question_id, probability in no_answer_probabilities.items():
        if probability > no_answer_threshold:  # predicted "no answer": right exactly when there is none
            exact[question_id] = f1[question_id] = float(not has_answer[question_id])

    def average(values: dict[str, float], question_ids: list[str]) -> float:
        return 100.0 * sum(values[question_id] for question_id in question_ids) / len(question_ids)

    all_ids = list(exact)
    results: dict[str, float | int] = {
        "exact": average(exact, all_ids),
        "f1": average(f1, all_ids),
        "total": len(all_ids),
    }
    for group, wanted in (("HasAns", True), ("NoAns", False)):
        group_ids = [question_id for question_id in all_ids if has_answer[question_id] == wanted]
        if group_ids:
            results.update(
                {
                    f"{group}_exact": average(exact, group_ids),
                    f"{group}_f1": average(f1, group_ids),
                    f"{group}_total": len(group_ids),
                }
            )
    results["best_exact"], results["best_exact_thresh"] = _best_threshold(
        predicted_text, raw_exact, no_answer_probabilities, has_answer
    )
    results["best_f1"], results["best_f1_thresh"] = _best_threshold(
        predicted_text, raw_f1, no_answer_probabilities, has_answer
    )
    return results
