"""SQuAD v1.1 exact match and F1 (the official evaluation script's logic: hf_variants.metrics.squad).
Same inputs and output as the Hub's ``evaluate.load("squad")``; loads offline from this folder."""

import datasets
import evaluate

from hf_variants.metrics.squad import squad_scores


class Squad(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__, citation="",
            inputs_description='predictions: [{"id", "prediction_text"}]; references: [{"id", "answers": {"text", "answer_start"}}]',
            features=datasets.Features({
                "predictions": {"id": datasets.Value("string"), "prediction_text": datasets.Value("string")},
                "references": {"id": datasets.Value("string"),
                               "answers": datasets.Sequence({"text": datasets.Value("string"), "answer_start": datasets.Value("int32")})},
            }),
        )

    def _compute(self, predictions, references):
        return squad_scores(predictions, references)
