"""transformers' BERT checkpoint layout: the weight names of ``transformers.Bert*`` and the config
checks for them, read by every variant whose checkpoints use that layout.

It lives here, below the variants, because several of them read it and no variant imports
another: BERT and SpanBERT (whose released checkpoints are plain BERT checkpoints) use the whole
key map; RoBERTa and ELECTRA name their encoder exactly as BERT does, under their own prefix, and
use :data:`BACKBONE` / :data:`BACKBONE_FUSED` with heads of their own.
"""

from __future__ import annotations

import transformers
from transformers import PreTrainedConfig

from .key_map import KeyMap, head_renames
from .variant_weights import require_values, shared_config_fields

_THEIR_LAYER, _OUR_LAYER = "encoder.layer.{i}", "encoder.layers.{i}"

# Inside the encoder (relative to it): transformers' name -> ours.
BACKBONE = [
    ("embeddings.word_embeddings.weight", "embeddings.word_embeddings.weight"),
    ("embeddings.position_embeddings.weight", "embeddings.position_embeddings.weight"),
    ("embeddings.token_type_embeddings.weight", "embeddings.token_type_embeddings.weight"),
] + head_renames(
    [
        ("embeddings.LayerNorm", "embeddings.layer_norm"),
        (f"{_THEIR_LAYER}.attention.output.dense", f"{_OUR_LAYER}.attention.out"),
        (f"{_THEIR_LAYER}.attention.output.LayerNorm", f"{_OUR_LAYER}.attention_norm"),
        (f"{_THEIR_LAYER}.intermediate.dense", f"{_OUR_LAYER}.ffn.up"),
        (f"{_THEIR_LAYER}.output.dense", f"{_OUR_LAYER}.ffn.down"),
        (f"{_THEIR_LAYER}.output.LayerNorm", f"{_OUR_LAYER}.ffn_norm"),
        ("pooler.dense", "pooler.dense"),
    ]
)

# Our fused QKV projection = transformers' query, key and value concatenated along dim 0.
BACKBONE_FUSED = [
    (
        f"{_OUR_LAYER}.attention.qkv.{param}",
        [f"{_THEIR_LAYER}.attention.self.{name}.{param}" for name in ("query", "key", "value")],
    )
    for param in ("weight", "bias")
]

MLM_HEAD = head_renames(
    [
        ("cls.predictions.transform.dense", "mlm_head.transform.dense"),
        ("cls.predictions.transform.LayerNorm", "mlm_head.transform.layer_norm"),
    ]
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


def check_bert_expressible(config: PreTrainedConfig) -> None:
    """Raise a ValueError for what transformers' BERT-style blocks cannot express (pre-LN,
    other position schemes, layer sharing)."""
    require_values(
        config,
        "BERT",
        {
            "pre_layer_norm": False,
            "position_embedding_type": "learned",
            "layer_sharing": "none",
        },
    )


def bert_config_to_theirs(config: PreTrainedConfig) -> transformers.BertConfig:
    """Our BERT-layout config -> transformers' BertConfig (fields it lacks are dropped)."""
    check_bert_expressible(config)
    fields = shared_config_fields(config, transformers.BertConfig)
    fields.pop("position_embedding_type", None)  # ours "learned" is transformers' default "absolute"
    return transformers.BertConfig(**fields)
