"""Pretraining objectives: data collators (usable as `Trainer(data_collator=...)`) and dataset
builders, the objectives registry (`registry.py`: one declared entry per objective), named
training recipes (`recipes.py`), the tokenize-once cache (`tokenized.py`) and compute budgets
(`budget.py`). `masking.py` holds the shared core (candidates, budgets, word boundaries, 80/10/10)
that later objectives (ELECTRA RTD, XLNet PLM, T5 span corruption, XLM TLM) build on."""

from .budget import count_flops, steps_for_flop_budget, training_step_flops
from .clm import (
    DataCollatorForPackedCausalLM,
    causal_lm_dataset,
    corpus_document_token_ids,
    document_causal_bias,
    document_causal_mask,
    document_separator_id,
    pack_causal_documents,
)
from .masking import (
    IGNORE_INDEX,
    VocabInfo,
    candidate_mask,
    corrupt,
    masking_budgets,
    pad_batch,
    select_whole_units,
    word_starts,
)
from .mlm import DataCollatorForMaskedLM, DataCollatorForPrecomputedMasks, MaskingCollator, make_static_masked_dataset
from .packing import (
    INPUT_FORMATS,
    iter_corpus_documents,
    pack_doc_sentences,
    pack_full_sentences,
    pretraining_dataset,
    tokenize_documents,
)
from .pairs import build_nsp_pairs, build_sop_pairs
from .plm import DataCollatorForPermutationLM, factorization_ranks, permutation_visibility
from .recipes import RECIPES, Recipe, recipe_for
from .recurrence import SegmentStreamDataset, split_into_streams
from .registry import OBJECTIVES, Objective, parse_objective, register_objective
from .rtd import DataCollatorForReplacedTokenDetection
from .span_corruption import (
    DataCollatorForSpanCorruption,
    pack_for_span_corruption,
    random_spans_noise_mask,
    sentinel_ids,
    span_corruption_dataset,
    span_corruption_lengths,
)
from .spans import (
    DataCollatorForNgramMasking,
    DataCollatorForSpanMasking,
    WordSpan,
    clipped_geometric_probabilities,
    inverse_length_probabilities,
    sample_batch_word_spans,
    sample_word_spans,
)
from .templates import SpecialTokenTemplate
from .tlm import DataCollatorForTranslationLM, build_tlm_example, tlm_dataset
from .tokenized import TokenizedCorpus, cached_tokenizer, packed_dataset, paragraph_rows, tokenize_corpus

__all__ = [
    "IGNORE_INDEX",
    "INPUT_FORMATS",
    "OBJECTIVES",
    "RECIPES",
    "Objective",
    "Recipe",
    "TokenizedCorpus",
    "cached_tokenizer",
    "count_flops",
    "packed_dataset",
    "paragraph_rows",
    "parse_objective",
    "recipe_for",
    "register_objective",
    "steps_for_flop_budget",
    "tokenize_corpus",
    "training_step_flops",
    "DataCollatorForMaskedLM",
    "DataCollatorForNgramMasking",
    "DataCollatorForPackedCausalLM",
    "DataCollatorForPermutationLM",
    "DataCollatorForPrecomputedMasks",
    "DataCollatorForReplacedTokenDetection",
    "DataCollatorForSpanCorruption",
    "DataCollatorForSpanMasking",
    "DataCollatorForTranslationLM",
    "MaskingCollator",
    "SegmentStreamDataset",
    "SpecialTokenTemplate",
    "VocabInfo",
    "WordSpan",
    "build_nsp_pairs",
    "build_sop_pairs",
    "build_tlm_example",
    "candidate_mask",
    "causal_lm_dataset",
    "clipped_geometric_probabilities",
    "corpus_document_token_ids",
    "corrupt",
    "document_causal_bias",
    "document_causal_mask",
    "document_separator_id",
    "factorization_ranks",
    "inverse_length_probabilities",
    "iter_corpus_documents",
    "make_static_masked_dataset",
    "masking_budgets",
    "pack_causal_documents",
    "pack_doc_sentences",
    "pack_for_span_corruption",
    "pack_full_sentences",
    "pad_batch",
    "permutation_visibility",
    "pretraining_dataset",
    "random_spans_noise_mask",
    "sample_batch_word_spans",
    "sample_word_spans",
    "select_whole_units",
    "sentinel_ids",
    "span_corruption_dataset",
    "span_corruption_lengths",
    "split_into_streams",
    "tlm_dataset",
    "tokenize_documents",
    "word_starts",
]
