"""hf_variants.metrics (local ``evaluate`` modules shipped with the package) against
scikit-learn, scipy, the seqeval package called directly, and hand-computed SQuAD values (the
official evaluation scripts' logic, worked out by hand in the comments)."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics
from seqeval import metrics as seqeval_metrics
from seqeval.scheme import IOB1, IOB2, IOBES

from hf_variants.metrics import (
    accuracy,
    f1,
    glue_metrics,
    matthews_corrcoef,
    pearson_and_spearman,
    seqeval_scores,
    squad_scores,
)


# ---------------------------------------------------------------------------- classification
@pytest.mark.filterwarnings("ignore:A single label was found")
@pytest.mark.parametrize("num_labels", [2, 3, 5])
def test_classification_metrics_match_sklearn(num_labels):
    generator = np.random.default_rng(num_labels)
    for trial in range(40):
        size = int(generator.integers(1, 60))
        references = generator.integers(0, num_labels, size)
        # Mix of random and mostly-right predictions, including degenerate constant ones.
        predictions = np.where(generator.random(size) < 0.6, references, generator.integers(0, num_labels, size))
        if trial % 10 == 0:
            predictions = np.full(size, trial % num_labels)
        assert accuracy(predictions, references) == pytest.approx(
            sklearn.metrics.accuracy_score(references, predictions)
        )
        assert matthews_corrcoef(predictions, references) == pytest.approx(
            sklearn.metrics.matthews_corrcoef(references, predictions), abs=1e-12
        )
        expected_macro = sklearn.metrics.f1_score(references, predictions, average="macro", zero_division=0)
        assert f1(predictions, references, average="macro") == pytest.approx(expected_macro)
        if num_labels == 2:
            expected_binary = sklearn.metrics.f1_score(references, predictions, zero_division=0)
            assert f1(predictions, references) == pytest.approx(expected_binary)
    assert type(accuracy([1, 0], [1, 1])) is float and type(matthews_corrcoef([1, 0], [1, 1])) is float


def test_accuracy_and_matthews_take_tag_strings():
    # run_ner --task_name pos scores word tags as strings ("NN", "CD"): a regression test for the
    # evaluate modules' integer features rejecting them.
    references = ["NN", "CD", "VB", "NN", "DT", "NN"]
    predictions = ["NN", "NN", "VB", "JJ", "DT", "NN"]
    assert accuracy(predictions, references) == pytest.approx(sklearn.metrics.accuracy_score(references, predictions))
    assert matthews_corrcoef(predictions, references) == pytest.approx(
        sklearn.metrics.matthews_corrcoef(references, predictions), abs=1e-12
    )
    assert accuracy(np.array(["a", "b"]), np.array(["a", "a"])) == 0.5


def test_classification_edge_cases_and_bad_input():
    assert f1([0, 0, 0], [0, 0, 0]) == 0.0  # no positives anywhere: sklearn's zero_division=0
    assert matthews_corrcoef([1, 1, 1], [0, 1, 0]) == 0.0  # constant prediction: undefined → 0
    assert matthews_corrcoef([0, 1, 0, 1], [0, 1, 0, 1]) == 1.0
    assert matthews_corrcoef([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    assert f1([1, 0], [1, 1], pos_label=1) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="2 predictions but 3 references"):
        accuracy([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="empty"):
        f1([], [])
    with pytest.raises(ValueError, match="average"):
        f1([0], [0], average="weighted")


def test_pearson_and_spearman_match_scipy_with_ties():
    generator = np.random.default_rng(0)
    for trial in range(40):
        size = int(generator.integers(3, 50))
        references = generator.integers(0, 6, size).astype(float)  # many ties
        predictions = references + generator.normal(0, 1.5, size)
        if trial % 3 == 0:
            predictions = np.round(predictions)  # ties on both sides
        scores = pearson_and_spearman(predictions, references)
        assert scores["pearson"] == pytest.approx(scipy.stats.pearsonr(predictions, references)[0], abs=1e-12)
        assert scores["spearmanr"] == pytest.approx(scipy.stats.spearmanr(predictions, references)[0], abs=1e-12)
    # Hand-computed: ranks of [1, 2, 2, 3] are [1, 2.5, 2.5, 4]; against [1, 2, 3, 4] rho = 0.9487
    assert pearson_and_spearman([1, 2, 2, 3], [1, 2, 3, 4])["spearmanr"] == pytest.approx(
        0.9 / math.sqrt(0.9 * 1.0), abs=1e-4
    )
    assert math.isnan(pearson_and_spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["pearson"])


def test_glue_metrics_pick_the_task_metric():
    assert set(glue_metrics("cola", [1, 0, 1], [1, 0, 0])) == {"matthews_correlation"}
    assert set(glue_metrics("stsb", [1.0, 2.5, 3.0], [1.2, 2.0, 4.0])) == {"pearson", "spearmanr"}
    mrpc = glue_metrics("mrpc", [1, 1, 0, 0], [1, 0, 0, 0])
    assert mrpc == {"accuracy": 0.75, "f1": pytest.approx(2 / 3)}
    assert set(glue_metrics("qqp", [1], [1])) == {"accuracy", "f1"}
    for task in ("sst2", "mnli", "mnli_mismatched", "qnli", "rte", "wnli"):
        assert set(glue_metrics(task, [0, 1], [0, 0])) == {"accuracy"}
    with pytest.raises(ValueError, match="unknown GLUE task 'squad'"):
        glue_metrics("squad", [0], [0])


# ---------------------------------------------------------------------------------- seqeval
_SEQEVAL_SCHEMES = {"IOB1": (IOB1, "IOB"), "IOB2": (IOB2, "IOB"), "BIOES": (IOBES, "IOBES")}


def _random_tags(rng: random.Random, prefixes: str, length: int) -> list[str]:
    tags = []
    for _ in range(length):
        prefix = rng.choice(prefixes + "OO")  # extra O weight, as in real data
        tags.append("O" if prefix == "O" else f"{prefix}-{rng.choice(['PER', 'LOC', 'geo-loc'])}")
    return tags


def _assert_same_as_seqeval(true_tags, pred_tags, scheme: str, mode: str) -> None:
    ours = seqeval_scores(true_tags, pred_tags, scheme=scheme, mode=mode)
    keyword_arguments = {"mode": "strict", "scheme": _SEQEVAL_SCHEMES[scheme][0]} if mode == "strict" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on undefined (zero-division) scores
        assert ours["overall_precision"] == pytest.approx(
            seqeval_metrics.precision_score(true_tags, pred_tags, **keyword_arguments)
        )
        assert ours["overall_recall"] == pytest.approx(
            seqeval_metrics.recall_score(true_tags, pred_tags, **keyword_arguments)
        )
        assert ours["overall_f1"] == pytest.approx(seqeval_metrics.f1_score(true_tags, pred_tags, **keyword_arguments))
        assert ours["overall_accuracy"] == pytest.approx(seqeval_metrics.accuracy_score(true_tags, pred_tags))
        report = seqeval_metrics.classification_report(true_tags, pred_tags, output_dict=True, **keyword_arguments)
    for entity_type, row in report.items():
        if entity_type.endswith(" avg"):
            continue
        assert ours[entity_type]["precision"] == pytest.approx(row["precision"])
        assert ours[entity_type]["recall"] == pytest.approx(row["recall"])
        assert ours[entity_type]["f1"] == pytest.approx(row["f1-score"])
        assert ours[entity_type]["number"] == row["support"]


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "BIOES"])
@pytest.mark.parametrize("mode", ["default", "strict"])
def test_seqeval_scores_match_seqeval_on_random_sequences(scheme, mode):
    rng = random.Random(f"{scheme}-{mode}")
    prefixes = _SEQEVAL_SCHEMES[scheme][1].replace("O", "")
    for _ in range(150):
        lengths = [rng.randint(1, 9) for _ in range(rng.randint(1, 5))]
        true_tags = [_random_tags(rng, prefixes, length) for length in lengths]
        pred_tags = [
            [t if rng.random() < 0.7 else p for t, p in zip(truth, _random_tags(rng, prefixes, len(truth)))]
            for truth in true_tags
        ]
        _assert_same_as_seqeval(true_tags, pred_tags, scheme, mode)


def test_seqeval_edge_cases():
    cases = {
        "all O": ([["O", "O"], ["O"]], [["O", "O"], ["O"]]),
        "nothing predicted": ([["B-PER", "I-PER", "O"]], [["O", "O", "O"]]),
        "entity at the end": ([["O", "B-LOC", "I-LOC"]], [["O", "B-LOC", "I-LOC"]]),
        "IOB1 starts with I-": ([["I-PER", "I-PER", "B-PER", "O"]], [["I-PER", "I-PER", "I-PER", "O"]]),
        "type change inside": ([["B-PER", "I-LOC", "O"]], [["B-PER", "I-PER", "O"]]),
    }
    for true_tags, pred_tags in cases.values():
        for scheme in ("IOB1", "IOB2"):
            for mode in ("default", "strict"):
                _assert_same_as_seqeval(true_tags, pred_tags, scheme, mode)
    # Hand-checked values.
    perfect_at_end = seqeval_scores(*cases["entity at the end"])
    assert perfect_at_end["overall_f1"] == 1.0 and perfect_at_end["LOC"]["number"] == 1
    assert seqeval_scores(*cases["all O"])["overall_f1"] == 0.0  # no entity at all: undefined → 0
    # IOB1: "I-PER I-PER B-PER" is two persons; predicting one long person gets neither right.
    iob1 = seqeval_scores(*cases["IOB1 starts with I-"], scheme="IOB1", mode="strict")
    assert (iob1["PER"]["number"], iob1["overall_precision"], iob1["overall_recall"]) == (2, 0.0, 0.0)
    # IOB2 strict: an I- without B- is no entity; the lenient default counts it.
    assert seqeval_scores([["I-PER", "O"]], [["I-PER", "O"]], mode="strict")["overall_f1"] == 0.0
    assert seqeval_scores([["I-PER", "O"]], [["I-PER", "O"]])["overall_f1"] == 1.0
    bioes = seqeval_scores([["S-PER", "B-LOC", "E-LOC"]], [["S-PER", "B-LOC", "I-LOC"]], scheme="BIOES", mode="strict")
    assert bioes["PER"]["f1"] == 1.0 and bioes["LOC"]["recall"] == 0.0 and bioes["overall_precision"] == 1.0


def test_seqeval_bad_input_and_report():
    with pytest.raises(ValueError, match="Invalid token is found: S-PER"):
        seqeval_scores([["S-PER"]], [["S-PER"]], scheme="IOB2", mode="strict")
    with pytest.raises(ValueError, match="sequence 0: 2 true tags but 1 predicted"):
        seqeval_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="unknown tagging scheme"):
        seqeval_scores([["O"]], [["O"]], scheme="XYZ")
    with pytest.raises(ValueError, match="is not 'O' or"):
        seqeval_scores([["PER"]], [["O"]])


# ------------------------------------------------------------------------------------ SQuAD
def _reference(question_id: str, *answers: str) -> dict:
    return {"id": question_id, "answers": {"text": list(answers), "answer_start": [0] * len(answers)}}


def _prediction(question_id: str, text: str, no_answer_probability: float | None = None) -> dict:
    prediction = {"id": question_id, "prediction_text": text}
    if no_answer_probability is not None:
        prediction["no_answer_probability"] = no_answer_probability
    return prediction


def test_squad_v1_hand_computed():
    # "the Eiffel Tower" normalises to "eiffel tower": exact match.
    assert squad_scores([_prediction("q", "the Eiffel Tower")], [_reference("q", "Eiffel Tower")]) == {
        "exact_match": 100.0,
        "f1": 100.0,
    }
    # prediction tokens {eiffel, tower, in, paris} vs gold {eiffel, tower}: P = 2/4, R = 1, F1 = 2/3.
    partial = squad_scores([_prediction("q", "Eiffel Tower in Paris")], [_reference("q", "Eiffel Tower")])
    assert partial["exact_match"] == 0.0 and partial["f1"] == pytest.approx(200 / 3)
    # Best over gold answers; punctuation, case and articles do not matter.
    predictions = [_prediction("a", "Broncos!"), _prediction("b", "an apple"), _prediction("c", "Adam")]
    references = [_reference("a", "Denver Broncos", "broncos"), _reference("b", "Apple"), _reference("c", "dam")]
    scores = squad_scores(predictions, references)
    assert scores["exact_match"] == pytest.approx(200 / 3)  # "Adam" is not "a" + "dam"
    assert scores["f1"] == pytest.approx(200 / 3)
    # Repeated tokens count once per occurrence: pred "the the cat cat" → {cat, cat} vs {cat}: P = 1/2, R = 1.
    assert squad_scores([_prediction("q", "cat cat")], [_reference("q", "cat")])["f1"] == pytest.approx(200 / 3)
    with pytest.raises(ValueError, match="no gold answer"):
        squad_scores([_prediction("q", "")], [_reference("q")])
    with pytest.raises(ValueError, match="no prediction"):
        squad_scores([], [_reference("q", "x")])


def test_squad_v2_hand_computed_with_thresholds():
    references = [_reference("q1", "Normandy"), _reference("q2"), _reference("q3"), _reference("q4", "10th century")]
    predictions = [
        _prediction("q1", "", 0.8),  # answerable, abstained: 0
        _prediction("q2", "", 0.1),  # unanswerable, abstained: 1
        _prediction("q3", "France", 0.9),  # unanswerable, answered: 0
        _prediction("q4", "the 10th century", 0.2),  # answerable, right: 1
    ]
    scores = squad_scores(predictions, references, version_2_with_negative=True)
    assert scores["exact"] == 50.0 and scores["f1"] == 50.0 and scores["total"] == 4
    assert (scores["HasAns_exact"], scores["HasAns_total"], scores["NoAns_exact"], scores["NoAns_total"]) == (
        50.0,
        2,
        50.0,
        2,
    )
    # Best threshold: start with all 2 no-answer questions right; in order of probability:
    # q2 (0.1) +0 → 2, q4 (0.2) +1 → 3 (best, threshold 0.2), q1 (0.8) +0, q3 (0.9) −1.
    assert scores["best_exact"] == 75.0 and scores["best_exact_thresh"] == pytest.approx(0.2)
    assert scores["best_f1"] == 75.0
    # With threshold 0.5, q1 and q3 count as "no answer": q1 wrong, q3 right → 3/4.
    thresholded = squad_scores(predictions, references, version_2_with_negative=True, no_answer_threshold=0.5)
    assert thresholded["exact"] == 75.0 and thresholded["NoAns_exact"] == 100.0
    # Only answerable questions: no NoAns keys; an empty prediction scores 0 F1 against a real answer.
    only_answerable = squad_scores(
        [_prediction("q1", "")], [_reference("q1", "Normandy")], version_2_with_negative=True
    )
    assert "NoAns_exact" not in only_answerable and only_answerable["f1"] == 0.0
    assert all(type(value) in (float, int) for value in scores.values())


# ----------------------------------------------------------------- the shipped evaluate modules
@pytest.mark.parametrize(
    "name", ["accuracy", "f1", "matthews_correlation", "pearsonr", "spearmanr", "seqeval", "squad", "squad_v2"]
)
def test_every_hub_metric_name_loads_offline_with_evaluate(name):
    """``evaluate.load(<folder inside the package>)`` works with the Hub offline (conftest sets
    HF_HUB_OFFLINE) and gives the Hub metric's keys, computed by the library itself."""
    import evaluate

    from hf_variants.metrics import metric_path

    metric = evaluate.load(metric_path(name))
    if name == "seqeval":
        scores = metric.compute(predictions=[["B-PER", "O", "B-LOC"]], references=[["B-PER", "O", "O"]])
        assert scores["overall_precision"] == 0.5 and scores["PER"]["number"] == 1
    elif name.startswith("squad"):
        prediction = {"id": "q", "prediction_text": "Eiffel Tower in Paris"}
        if name == "squad_v2":
            prediction["no_answer_probability"] = 0.0
        scores = metric.compute(predictions=[prediction], references=[_reference("q", "Eiffel Tower")])
        assert scores["f1"] == pytest.approx(200 / 3)
    else:
        rng = np.random.default_rng(0)
        references, predictions = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
        expected = {
            "accuracy": sklearn.metrics.accuracy_score(references, predictions),
            "f1": sklearn.metrics.f1_score(references, predictions),
            "matthews_correlation": sklearn.metrics.matthews_corrcoef(references, predictions),
            "pearsonr": scipy.stats.pearsonr(predictions, references)[0],
            "spearmanr": scipy.stats.spearmanr(predictions, references)[0],
        }[name]
        assert metric.compute(predictions=predictions, references=references) == {
            name: pytest.approx(expected, abs=1e-12)
        }


def test_unknown_metric_name_is_a_clear_error():
    from hf_variants.metrics import metric_path

    with pytest.raises(ValueError, match="no shipped metric 'bleu'"):
        metric_path("bleu")
