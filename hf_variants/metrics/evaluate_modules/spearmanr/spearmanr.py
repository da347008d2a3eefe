"""Spearman rank correlation (scipy.stats.spearmanr; ties get average ranks), optionally with its p-value.
Same inputs and output as the Hub's ``evaluate.load("spearmanr")``; loads offline from this folder."""

import evaluate
from scipy.stats import spearmanr

from hf_variants.metrics.loading import paired_metric_info


class Spearmanr(evaluate.Metric):
    def _info(self):
        return paired_metric_info(__doc__, "float64")

    def _compute(self, predictions, references, return_pvalue=False):
        statistic, pvalue = spearmanr(predictions, references)
        return (
            {"spearmanr": float(statistic), "spearmanr_pvalue": float(pvalue)}
            if return_pvalue
            else {"spearmanr": float(statistic)}
        )
