"""F1 (scikit-learn's f1_score): binary (the ``pos_label`` class) or averaged over classes.
Same inputs and output as the Hub's ``evaluate.load("f1")``; loads offline from this folder."""

import evaluate
from sklearn.metrics import f1_score

from hf_variants.metrics.loading import paired_metric_info


class F1(evaluate.Metric):
    def _info(self):
        return paired_metric_info(__doc__, "int32")

    def _compute(
        self, predictions, references, labels=None, pos_label=1, average="binary", sample_weight=None, zero_division=0.0
    ):
        score = f1_score(
            references,
            predictions,
            labels=labels,
            pos_label=pos_label,
            average=average,
            sample_weight=sample_weight,
            zero_division=zero_division,
        )
        return {"f1": float(score) if average is not None else score}
