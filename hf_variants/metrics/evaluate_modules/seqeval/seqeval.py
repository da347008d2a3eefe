"""Entity-level precision, recall and F1 of tag sequences (the seqeval package), plus token accuracy.

Same inputs and output as the Hub's ``evaluate.load("seqeval")``: ``{<entity type>: {"precision",
"recall", "f1", "number"}, "overall_precision", "overall_recall", "overall_f1", "overall_accuracy"}``.
``mode="strict"`` with a ``scheme`` ("IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU") applies the
scheme's rules; the default mode is conlleval's lenient chunking. Malformed input (sequences of
different lengths, tags that are not "O" or "<prefix>-<type>", an unknown scheme) raises ValueError.
"""

import datasets
import evaluate
import seqeval.scheme
from seqeval.metrics import accuracy_score, classification_report

SCHEMES = ("IOB1", "IOB2", "IOE1", "IOE2", "IOBES", "BILOU")


def _check(predictions, references, suffix: bool) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predicted sequences but {len(references)} reference sequences")
    for index, (predicted, true) in enumerate(zip(predictions, references)):
        if len(predicted) != len(true):
            raise ValueError(f"sequence {index}: {len(true)} true tags but {len(predicted)} predicted")
        for tag in (*predicted, *true):
            if tag != "O" and "-" not in tag:
                raise ValueError(
                    f"sequence {index}: tag {tag!r} is not 'O' or '<prefix>-<type>'"
                    + (" / '<type>-<suffix>'" if suffix else "")
                )


class Seqeval(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation="",
            inputs_description="predictions, references: lists of tag lists; suffix, scheme, mode, sample_weight, zero_division",
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string", id="label"), id="sequence"),
                    "references": datasets.Sequence(datasets.Value("string", id="label"), id="sequence"),
                }
            ),
        )

    def _compute(
        self, predictions, references, suffix=False, scheme=None, mode=None, sample_weight=None, zero_division="warn"
    ):
        _check(predictions, references, suffix)
        if scheme is not None:
            if scheme not in SCHEMES:
                raise ValueError(f"unknown tagging scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
            scheme = getattr(seqeval.scheme, scheme)
        report = classification_report(
            y_true=references,
            y_pred=predictions,
            suffix=suffix,
            output_dict=True,
            scheme=scheme,
            mode=mode,
            sample_weight=sample_weight,
            zero_division=zero_division,
        )
        overall = report.pop("micro avg")
        for average in ("macro avg", "weighted avg"):
            report.pop(average, None)
        scores = {
            entity_type: {
                "precision": float(row["precision"]),
                "recall": float(row["recall"]),
                "f1": float(row["f1-score"]),
                "number": int(row["support"]),
            }
            for entity_type, row in report.items()
        }
        scores.update(
            overall_precision=float(overall["precision"]),
            overall_recall=float(overall["recall"]),
            overall_f1=float(overall["f1-score"]),
            overall_accuracy=float(accuracy_score(y_true=references, y_pred=predictions)),
        )
        return scores
