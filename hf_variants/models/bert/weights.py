"""BERT's weights: the one explicit key map between transformers' BERT and ours, and the config
translation. Read by ``from_transformers``, ``to_transformers`` and ``from_pretrained`` alike
(see ``hf_variants.conversion``); it imports no modeling code.
"""

from __future__ import annotations

import transformers

from ...conversion import KeyMap, StateDictAdapter, VariantWeights, shared_config_fields
from .configuration_bert import BertConfig

_THEIR_LAYER, _OUR_LAYER = "encoder.layer.{i}", "encoder.layers.{i}"

# Inside the encoder (relative to it): transformers' name -> ours.
BACKBONE = [
    ("embeddings.word_embeddings.weight", "embeddings.word_embeddings.weight"),
    ("embeddings.position_embeddings.weight", "embeddings.position_embeddings.weight"),
    ("embeddings.token_type_embeddings.weight", "embeddings.token_type_embeddings.weight"),
] + [
    (f"{theirs}.{param}", f"{ours}.{param}")
    for theirs, ours in (
        ("embeddings.LayerNorm", "embeddings.layer_norm"),
        (f"{_THEIR_LAYER}.attention.output.dense", f"{_OUR_LAYER}.attention.out"),
        (f"{_THEIR_LAYER}.attention.output.LayerNorm", f"{_OUR_LAYER}.attention_norm"),
        (f"{_THEIR_LAYER}.intermediate.dense", f"{_OUR_LAYER}.ffn.up"),
        (f"{_THEIR_LAYER}.output.dense", f"{_OUR_LAYER}.ffn.down"),
        (f"{_THEIR_LAYER}.output.LayerNorm", f"{_OUR_LAYER}.ffn_norm"),
        ("pooler.dense", "pooler.dense"),
    )
    for param in ("weight", "bias")
]

# Our fused QKV projection = transformers' query, key and value concatenated along dim 0.
BACKBONE_FUSED = [
    (f"{_OUR_LAYER}.attention.qkv.{param}", [f"{_THEIR_LAYER}.attention.self.{name}.{param}" for name in ("query", "key", "value")])
    for param in ("weight", "bias")
]


def head_renames(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(their module, our module) -> weight and bias renames."""
    return [(f"{theirs}.{p}", f"{ours}.{p}") for theirs, ours in pairs for p in ("weight", "bias")]


MLM_HEAD = head_renames(
    [("cls.predictions.transform.dense", "mlm_head.transform.dense"), ("cls.predictions.transform.LayerNorm", "mlm_head.transform.layer_norm")]
) + [("cls.predictions.decoder.weight", "mlm_head.decoder.weight"), ("cls.predictions.bias", "mlm_head.decoder.bias")]
NSP_HEAD = head_renames([("cls.seq_relationship", "nsp_head")])
# transformers keeps the decoder bias under two names (tied); ours has one.
MLM_IGNORED = [r"cls\.predictions\.decoder\.bias"]

KEY_MAP = KeyMap(
    backbone=BACKBONE,
    backbone_fused=BACKBONE_FUSED,
    heads={
        "Model": [],
        "ForPreTraining": MLM_HEAD + NSP_HEAD,
        "ForMaskedLM": MLM_HEAD,
        "ForNextSentencePrediction": NSP_HEAD,
        "ForSequenceClassification": head_renames([("classifier", "classifier.out_proj")]),
        "ForTokenClassification": head_renames([("classifier", "classifier")]),
        "ForQuestionAnswering": head_renames([("qa_outputs", "qa_outputs")]),
        "ForMultipleChoice": head_renames([("classifier", "classifier.out_proj")]),
    },
    ignored={"ForPreTraining": MLM_IGNORED, "ForMaskedLM": MLM_IGNORED},
    their_prefix="bert",
    our_prefix="bert",
)


def bert_adapter(head: str) -> StateDictAdapter:
    """The full-key adapter between transformers' ``Bert<head>`` and ours."""
    return KEY_MAP.adapter(head)


def config_to_theirs(config: BertConfig) -> transformers.BertConfig:
    unsupported = {
        "pre_layer_norm": (config.pre_layer_norm, False),
        "position_embedding_type": (config.position_embedding_type, "learned"),
        "layer_sharing": (config.layer_sharing, "none"),
    }
    for name, (value, required) in unsupported.items():
        if value != required:
            raise ValueError(f"transformers' BERT has no equivalent of {name}={value!r} (needs {required!r})")
    fields = shared_config_fields(config, transformers.BertConfig)
    fields.pop("position_embedding_type", None)
    return transformers.BertConfig(**fields)


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
