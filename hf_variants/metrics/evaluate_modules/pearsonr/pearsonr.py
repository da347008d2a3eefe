"""Pearson correlation coefficient (scipy.stats.pearsonr), optionally with its p-value.
Same inputs and output as the Hub's ``evaluate.load("pearsonr")``; loads offline from this folder."""

import evaluate
from scipy.stats import pearsonr

from hf_variants.metrics.loading import paired_metric_info


class Pearsonr(evaluate.Metric):
    def _info(self):
        return paired_metric_info(__doc__, "float64")

    def _compute(self, predictions, references, return_pvalue=False):
        statistic, pvalue = pearsonr(references, predictions)
        return (
            {"pearsonr": float(statistic), "p-value": float(pvalue)}
            if return_pvalue
            else {"pearsonr": float(statistic)}
        )
