"""Offline metrics (numpy only; no ``evaluate`` download): classification, correlation,
entity-level sequence labelling (seqeval), SQuAD v1/v2 and generated text (exact match, token
error rate). All return plain Python numbers.
"""

from .classification import GLUE_TASKS, accuracy, f1, glue_metrics, matthews_corrcoef, pearson_and_spearman
from .generation import edit_distance, sequence_scores
from .sequence_labeling import SCHEMES, extract_entities, seqeval_classification_report, seqeval_scores
from .squad import exact_match_score, f1_score, normalize_answer, squad_scores

__all__ = [
    "GLUE_TASKS",
    "SCHEMES",
    "accuracy",
    "edit_distance",
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
    "sequence_scores",
    "squad_scores",
]
