"""SQuAD v2.0 scores with unanswerable questions (the official evaluation script's logic:
hf_variants.metrics.squad): exact/f1 overall and per HasAns/NoAns group, and the best no-answer
threshold. Same inputs and output as the Hub's ``evaluate.load("squad_v2")``; loads offline from this folder."""

import datasets
import evaluate

from hf_variants.metrics.squad import squad_scores


class SquadV2(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__, citation="",
            inputs_description='predictions: [{"id", "prediction_text", "no_answer_probability"}]; references: [{"id", "answers"}]; no_answer_threshold',
            features=datasets.Features({
                "predictions": {"id": datasets.Value("string"), "prediction_text": datasets.Value("string"),
                                "no_answer_probability": datasets.Value("float32")},
                "references": {"id": datasets.Value("string"),
                               "answers": datasets.Sequence({"text": datasets.Value("string"), "answer_start": datasets.Value("int32")})},
            }),
        )

    def _compute(self, predictions, references, no_answer_threshold=1.0):
        return squad_scores(predictions, references, version_2_with_negative=True, no_answer_threshold=no_answer_threshold)
