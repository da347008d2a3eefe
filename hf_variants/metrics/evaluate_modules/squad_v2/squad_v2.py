"""SQuAD v2.0 scores with unanswerable questions (the official evaluation script's logic:
hf_variants.metrics.squad): exact/f1 overall and per HasAns/NoAns group, and the best no-answer
threshold. Same inputs and output as the Hub's ``evaluate.load("squad_v2")``; loads offline from this folder."""

import evaluate

from hf_variants.metrics.loading import squad_metric_info
from hf_variants.metrics.squad import squad_scores


class SquadV2(evaluate.Metric):
    def _info(self):
        return squad_metric_info(__doc__, version_2=True)

    def _compute(self, predictions, references, no_answer_threshold=1.0):
        return squad_scores(
            predictions, references, version_2_with_negative=True, no_answer_threshold=no_answer_threshold
        )
