"""Pretraining objectives: data collators (usable as `Trainer(data_collator=...)`) and dataset
builders. `masking.py` holds the shared core (candidates, budgets, word boundaries, 80/10/10)
that later objectives (ELECTRA RTD, XLNet PLM, T5 span corruption, XLM TLM) build on."""

from .masking import (IGNORE_INDEX, VocabInfo, candidate_mask, corrupt, masking_budgets, pad_batch,
                      select_whole_units, word_starts)
from .mlm import (DataCollatorForMaskedLM, DataCollatorForPrecomputedMasks, MaskingCollator,
                  make_static_masked_dataset)
from .packing import (INPUT_FORMATS, iter_corpus_documents, pack_doc_sentences, pack_full_sentences,
                      pretraining_dataset, tokenize_documents)
from .pairs import build_nsp_pairs, build_sop_pairs
from .rtd import DataCollatorForReplacedTokenDetection
from .spans import (DataCollatorForNgramMasking, DataCollatorForSpanMasking, WordSpan,
                    clipped_geometric_probabilities, inverse_length_probabilities, sample_word_spans)
from .templates import SpecialTokenTemplate

__all__ = [
    "IGNORE_INDEX", "INPUT_FORMATS", "DataCollatorForMaskedLM", "DataCollatorForNgramMasking",
    "DataCollatorForPrecomputedMasks", "DataCollatorForReplacedTokenDetection", "DataCollatorForSpanMasking", "MaskingCollator", "SpecialTokenTemplate",
    "VocabInfo", "WordSpan", "build_nsp_pairs", "build_sop_pairs", "candidate_mask",
    "clipped_geometric_probabilities", "corrupt", "inverse_length_probabilities", "iter_corpus_documents",
    "make_static_masked_dataset", "masking_budgets", "pack_doc_sentences", "pack_full_sentences", "pad_batch",
    "pretraining_dataset", "sample_word_spans", "select_whole_units", "tokenize_documents", "word_starts",
]
