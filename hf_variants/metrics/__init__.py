"""Metrics as local ``evaluate`` modules shipped with the package (no Hub download).

``hf_variants/metrics/evaluate_modules/<name>/`` holds ``accuracy``, ``f1``,
``matthews_correlation``, ``pearsonr``, ``spearmanr`` (scikit-learn / scipy), ``seqeval`` (the
seqeval package), ``squad`` and ``squad_v2`` (the official scripts' logic, squad.py): the same
inputs and outputs as the Hub's metrics of those names. Load one with ``load_metric("f1")`` or
``evaluate.load(metric_path("f1"))``. The functions below are the shortcuts the example scripts use; ``sequence_scores`` scores
generated text (exact match, token error rate).
"""

from .classification import GLUE_TASKS, accuracy, f1, glue_metrics, matthews_corrcoef, pearson_and_spearman
from .generation import edit_distance, sequence_scores
from .loading import METRIC_NAMES, load_metric, metric_path
from .sequence_labeling import seqeval_scores
from .squad import exact_match_score, f1_score, normalize_answer, squad_scores

__all__ = [
    "GLUE_TASKS",
    "METRIC_NAMES",
    "accuracy",
    "edit_distance",
    "exact_match_score",
    "f1",
    "f1_score",
    "glue_metrics",
    "load_metric",
    "matthews_corrcoef",
    "metric_path",
    "normalize_answer",
    "pearson_and_spearman",
    "seqeval_scores",
    "sequence_scores",
    "squad_scores",
]
