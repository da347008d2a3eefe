"""Accuracy: the fraction of predictions equal to their references (scikit-learn's accuracy_score).
Same inputs and output as the Hub's ``evaluate.load("accuracy")``; loads offline from this folder."""

import evaluate
from sklearn.metrics import accuracy_score

from hf_variants.metrics.loading import paired_metric_info


class Accuracy(evaluate.Metric):
    def _info(self):
        return paired_metric_info(__doc__, "int32")

    def _compute(self, predictions, references, normalize=True, sample_weight=None):
        return {
            "accuracy": float(accuracy_score(references, predictions, normalize=normalize, sample_weight=sample_weight))
        }
