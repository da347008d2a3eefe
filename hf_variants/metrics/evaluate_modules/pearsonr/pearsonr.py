"""Pearson correlation coefficient (scipy.stats.pearsonr), optionally with its p-value.
Same inputs and output as the Hub's ``evaluate.load("pearsonr")``; loads offline from this folder."""

import datasets
import evaluate
from scipy.stats import pearsonr


class Pearsonr(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__, citation="", inputs_description="predictions, references: floats; return_pvalue",
            features=datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}),
        )

    def _compute(self, predictions, references, return_pvalue=False):
        statistic, pvalue = pearsonr(references, predictions)
        return {"pearsonr": float(statistic), "p-value": float(pvalue)} if return_pvalue else {"pearsonr": float(statistic)}
