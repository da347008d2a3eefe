"""Entity-level precision / recall / F1 for sequence labelling (the ``seqeval`` metric, offline).

Two ways to read entities out of a tag sequence, as in the ``seqeval`` package:

- ``mode="default"``: CoNLL-2000's ``conlleval`` rules. Lenient: any tag prefix (B/I/E/S) and any
  type change opens or closes a chunk, so an ``I-PER`` after ``O`` starts a PER entity. This is
  what Hugging Face's ``run_ner.py`` reports (``evaluate.load("seqeval")`` with no mode).
- ``mode="strict"``: only the chunks the tagging ``scheme`` (IOB1, IOB2, BIOES) allows; a tag the
  scheme does not use raises ``ValueError`` and ill-formed pieces (an ``I-`` with no ``B-`` in
  IOB2) are no entity at all.

Scores are micro-averaged over entities; a type's ``number`` is its count of true entities.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

Entity = tuple[int, int, int, str]  # (sentence index, first token, last token, type)

SCHEMES = ("IOB1", "IOB2", "BIOES")
_SCHEME_ALIASES = {"IOB1": "IOB1", "IOB2": "IOB2", "BIO": "IOB2", "BIOES": "BIOES", "IOBES": "BIOES"}
_SCHEME_PREFIXES = {"IOB1": "IOB", "IOB2": "IOB", "BIOES": "IOBES"}


def _split_tag(tag: str) -> tuple[str, str]:
    """``"B-geo-loc"`` → ``("B", "geo-loc")``; ``"O"`` → ``("O", "")``."""
    if tag == "O":
        return "O", ""
    prefix, separator, entity_type = tag.partition("-")
    if not separator or len(prefix) != 1 or not entity_type:
        raise ValueError(f"tag {tag!r} is not 'O' or '<prefix>-<type>'")
    return prefix, entity_type


# --------------------------------------------------------------------------------- default
def _conll_chunk_ends(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    (previous_prefix, previous_type), (prefix, entity_type) = previous, current
    if previous_prefix in ("E", "S"):
        return True
    if previous_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return previous_prefix != "O" and previous_type != entity_type


def _conll_chunk_starts(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    (previous_prefix, previous_type), (prefix, entity_type) = previous, current
    if prefix in ("B", "S"):
        return True
    if prefix in ("E", "I") and previous_prefix in ("E", "S", "O"):
        return True
    return prefix != "O" and previous_type != entity_type


def _default_entities(tags: Sequence[str], sentence: int) -> list[Entity]:
    entities: list[Entity] = []
    previous, start = ("O", ""), 0
    for position, tag in enumerate(list(tags) + ["O"]):
        current = _split_tag(tag)
        if _conll_chunk_ends(previous, current):
            entities.append((sentence, start, position - 1, previous[1]))
        if _conll_chunk_starts(previous, current):
            start = position
        previous = current
    return entities


# ---------------------------------------------------------------------------------- strict
def _continues(scheme: str, previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """Does ``current`` extend the entity that ``previous`` belongs to?"""
    (previous_prefix, previous_type), (prefix, entity_type) = previous, current
    if entity_type != previous_type:
        return False
    if scheme == "BIOES":
        return previous_prefix in ("B", "I") and prefix in ("I", "E")
    return previous_prefix in ("B", "I") and prefix == "I"


def _opens(scheme: str, previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """Can an entity start at ``current``, given the tag before it?"""
    (previous_prefix, previous_type), (prefix, entity_type) = previous, current
    if scheme == "IOB2":
        return prefix == "B"
    if scheme == "BIOES":
        return prefix in ("B", "S")
    # IOB1: I- opens an entity after O, after another type, or after a B- that was not itself
    # a legal start (a B- entity would have absorbed this I-); B- only separates two adjacent
    # entities of the same type.
    if prefix == "I":
        return previous_prefix in ("O", "B") or previous_type != entity_type
    if prefix == "B":
        return previous_prefix in ("I", "B") and previous_type == entity_type
    return False


def _closes_validly(scheme: str, last: tuple[str, str], following: tuple[str, str]) -> bool:
    """Is ``last`` a legal final tag of an entity when ``following`` comes next?"""
    last_prefix, following_prefix = last[0], following[0]
    if scheme == "BIOES":
        return last_prefix in ("E", "S")
    if scheme == "IOB1" and last_prefix == "B":
        # A lone B- is only legal right before another entity of its type.
        return (
            following_prefix == "O"
            or following[1] != last[1]
            and following_prefix == "I"
            or following_prefix == "B"
            and following[1] == last[1]
        )
    return True


def _strict_entities(tags: Sequence[str], sentence: int, scheme: str) -> list[Entity]:
    allowed = _SCHEME_PREFIXES[scheme]
    parsed = [_split_tag(tag) for tag in tags]
    for tag, (prefix, _) in zip(tags, parsed):
        if prefix not in allowed:
            raise ValueError(f"tag {tag!r} is not allowed in the {scheme} scheme (prefixes {', '.join(allowed)})")
    parsed.append(("O", ""))
    entities: list[Entity] = []
    previous = ("O", "")
    position = 0
    while position < len(parsed) - 1:
        current = parsed[position]
        if current[0] != "O" and _opens(scheme, previous, current):
            end = position
            while _continues(scheme, parsed[end], parsed[end + 1]):
                end += 1
            if _closes_validly(scheme, parsed[end], parsed[end + 1]):
                entities.append((sentence, position, end, current[1]))
            previous, position = parsed[end], end + 1
        else:
            previous, position = current, position + 1
    return entities


# ---------------------------------------------------------------------------------- scores
def extract_entities(
    tag_sequences: Sequence[Sequence[str]], scheme: str = "IOB2", mode: str = "default"
) -> list[Entity]:
    """All entities ``(sentence, first token, last token, type)`` of a batch of tag sequences."""
    if mode not in ("default", "strict"):
        raise ValueError(f"mode must be 'default' or 'strict', got {mode!r}")
    if scheme.upper() not in _SCHEME_ALIASES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; known schemes: {', '.join(SCHEMES)}")
    scheme = _SCHEME_ALIASES[scheme.upper()]
    entities: list[Entity] = []
    for sentence, tags in enumerate(tag_sequences):
        if isinstance(tags, str):
            raise ValueError("pass a list of tag sequences (one list of tags per sentence)")
        entities.extend(
            _default_entities(tags, sentence) if mode == "default" else _strict_entities(tags, sentence, scheme)
        )
    return entities


def _precision_recall_f1(correct: int, predicted: int, actual: int) -> tuple[float, float, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return float(precision), float(recall), float(f1)


def seqeval_scores(
    true_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]], scheme: str = "IOB2", mode: str = "default"
) -> dict:
    """Entity-level scores, keyed like ``evaluate``'s seqeval metric.

    Returns ``{"overall_precision", "overall_recall", "overall_f1", "overall_accuracy"}`` (token
    accuracy) plus, per entity type, ``{type: {"precision", "recall", "f1", "number"}}``.
    Undefined ratios (no predicted or no true entities) are 0.0.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"{len(true_tags)} true sequences but {len(pred_tags)} predicted ones")
    for index, (truth, prediction) in enumerate(zip(true_tags, pred_tags)):
        if len(truth) != len(prediction):
            raise ValueError(f"sequence {index}: {len(truth)} true tags but {len(prediction)} predicted tags")
    true_entities = set(extract_entities(true_tags, scheme, mode))
    predicted_entities = set(extract_entities(pred_tags, scheme, mode))
    correct = true_entities & predicted_entities

    true_by_type = Counter(entity[3] for entity in true_entities)
    predicted_by_type = Counter(entity[3] for entity in predicted_entities)
    correct_by_type = Counter(entity[3] for entity in correct)
    results: dict = {}
    for entity_type in sorted(set(true_by_type) | set(predicted_by_type)):
        precision, recall, f1 = _precision_recall_f1(
            correct_by_type[entity_type], predicted_by_type[entity_type], true_by_type[entity_type]
        )
        results[entity_type] = {"precision": precision, "recall": recall, "f1": f1, "number": true_by_type[entity_type]}
    precision, recall, f1 = _precision_recall_f1(len(correct), len(predicted_entities), len(true_entities))
    token_count = sum(len(tags) for tags in true_tags)
    token_matches = sum(t == p for truth, prediction in zip(true_tags, pred_tags) for t, p in zip(truth, prediction))
    results.update(
        overall_precision=precision,
        overall_recall=recall,
        overall_f1=f1,
        overall_accuracy=float(token_matches / token_count) if token_count else 0.0,
    )
    return results


def seqeval_classification_report(
    true_tags: Sequence[Sequence[str]],
    pred_tags: Sequence[Sequence[str]],
    scheme: str = "IOB2",
    mode: str = "default",
    digits: int = 4,
) -> str:
    """A text table of per-type and micro-averaged precision / recall / F1 / support."""
    scores = seqeval_scores(true_tags, pred_tags, scheme, mode)
    types = [key for key in scores if not key.startswith("overall_")]
    width = max([len(entity_type) for entity_type in types] + [len("micro avg")])

    def row(name: str, precision: float, recall: float, f1: float, support: int) -> str:
        numbers = "  ".join(f"{value:>9.{digits}f}" for value in (precision, recall, f1))
        return f"{name:>{width}}  {numbers}  {support:>9}"

    header = f"{'':>{width}}  {'precision':>9}  {'recall':>9}  {'f1-score':>9}  {'support':>9}"
    lines = [header, ""]
    for entity_type in types:
        per_type = scores[entity_type]
        lines.append(row(entity_type, per_type["precision"], per_type["recall"], per_type["f1"], per_type["number"]))
    support = sum(scores[entity_type]["number"] for entity_type in types)
    overall = (scores["overall_precision"], scores["overall_recall"], scores["overall_f1"])
    lines += ["", row("micro avg", *overall, support)]
    return "\n".join(lines) + "\n"
