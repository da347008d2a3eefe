"""Matthews correlation coefficient (scikit-learn's matthews_corrcoef; 0 when undefined).
Same inputs and output as the Hub's ``evaluate.load("matthews_correlation")``; loads offline from this folder."""

import evaluate
from sklearn.metrics import matthews_corrcoef

from hf_variants.metrics.loading import paired_metric_info


class MatthewsCorrelation(evaluate.Metric):
    def _info(self):
        return paired_metric_info(__doc__, "int32")

    def _compute(self, predictions, references, sample_weight=None):
        return {"matthews_correlation": float(matthews_corrcoef(references, predictions, sample_weight=sample_weight))}
