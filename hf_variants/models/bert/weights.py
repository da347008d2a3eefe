"""BERT's weights: transformers' BERT layout (the one explicit key map, kept in
``hf_variants/conversion/bert_layout.py`` because SpanBERT's checkpoints use it too and RoBERTa and
ELECTRA name their encoders the same way) and the config translation. Read by
``from_transformers``, ``to_transformers`` and ``from_pretrained`` alike (see
``hf_variants.conversion``); it imports no modeling code.
"""

from __future__ import annotations

import transformers

from ...conversion import StateDictAdapter, VariantWeights
from ...conversion.bert_layout import KEY_MAP, bert_config_to_theirs
from .configuration_bert import BertConfig


def bert_adapter(head: str) -> StateDictAdapter:
    """The full-key adapter between transformers' ``Bert<head>`` and ours."""
    return KEY_MAP.adapter(head)


def config_to_theirs(config: BertConfig) -> transformers.BertConfig:
    return bert_config_to_theirs(config)


WEIGHTS = VariantWeights(
    config_class=BertConfig,
    key_map=KEY_MAP,
    transformers_classes={head: f"Bert{head}" for head in KEY_MAP.heads},
    # transformers' BERT, and SpanBERT's checkpoints (BERT's encoder under the same names).
    source_model_types=("bert", "hfv_spanbert"),
    config_to_theirs=config_to_theirs,  # (transformers' position_embedding_type "absolute" is read as "learned" by BertConfig)
)


def config_to_ours(config: transformers.BertConfig, **overrides) -> BertConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
