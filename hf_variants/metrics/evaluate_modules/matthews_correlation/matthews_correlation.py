"""Matthews correlation coefficient (scikit-learn's matthews_corrcoef; 0 when undefined).
Same inputs and output as the Hub's ``evaluate.load("matthews_correlation")``; loads offline from this folder."""

import datasets
import evaluate
from sklearn.metrics import matthews_corrcoef


class MatthewsCorrelation(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__, citation="", inputs_description="predictions, references: label ids; sample_weight",
            features=datasets.Features({"predictions": datasets.Value("int32"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references, sample_weight=None):
        return {"matthews_correlation": float(matthews_corrcoef(references, predictions, sample_weight=sample_weight))}
