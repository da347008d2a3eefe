"""SQuAD v1.1 exact match and F1 (the official evaluation script's logic: hf_variants.metrics.squad).
Same inputs and output as the Hub's ``evaluate.load("squad")``; loads offline from this folder."""

import evaluate

from hf_variants.metrics.loading import squad_metric_info
from hf_variants.metrics.squad import squad_scores


class Squad(evaluate.Metric):
    def _info(self):
        return squad_metric_info(__doc__, version_2=False)

    def _compute(self, predictions, references):
        return squad_scores(predictions, references)
