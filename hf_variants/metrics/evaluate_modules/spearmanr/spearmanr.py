"""Spearman rank correlation (scipy.stats.spearmanr; ties get average ranks), optionally with its p-value.
Same inputs and output as the Hub's ``evaluate.load("spearmanr")``; loads offline from this folder."""

import datasets
import evaluate
from scipy.stats import spearmanr


class Spearmanr(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__, citation="", inputs_description="predictions, references: floats; return_pvalue",
            features=datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}),
        )

    def _compute(self, predictions, references, return_pvalue=False):
        statistic, pvalue = spearmanr(predictions, references)
        return {"spearmanr": float(statistic), "spearmanr_pvalue": float(pvalue)} if return_pvalue else {"spearmanr": float(statistic)}
