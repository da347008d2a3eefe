"""Offline metrics (numpy only; no ``evaluate`` download): classification, correlation,
entity-level sequence labelling (seqeval) and SQuAD v1/v2. All return plain Python numbers.
"""

from .classification import GLUE_TASKS, accuracy, f1, glue_metrics, matthews_corrcoef, pearson_and_spearman
from .sequence_labeling import SCHEMES, extract_entities, seqeval_classification_report, seqeval_scores
from .squad import exact_match_score, f1_score, normalize_answer, squad_scores

__all__ = [
    "GLUE_TASKS",
    "SCHEMES",
    "accuracy",
    "exact_match_score",
    "extract_entities",
    "f1",
    "f1_score",
    "glue_metrics",
    "matthews_corrcoef",
    "normalize_answer",
    "pearson_and_spearman",
    "seqeval_classification_report",
    "seqeval_scores",
    "squad_scores",
]
