"""Pretraining objectives as data collators and dataset builders (see `masking.py` for the shared core)."""

from .masking import IGNORE_INDEX, VocabInfo, corrupt, masking_budgets, select_whole_units, word_starts
from .mlm import (DataCollatorForMaskedLM, DataCollatorForPrecomputedMasks, MaskingCollator,
                  make_static_masked_dataset)
from .spans import (DataCollatorForNgramMasking, DataCollatorForSpanMasking, WordSpan,
                    clipped_geometric_probabilities, inverse_length_probabilities, sample_word_spans)
