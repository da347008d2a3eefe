"""XLNet's weights: the one explicit key map between transformers' XLNet and ours, and the config
translation. Read by ``from_transformers``, ``to_transformers`` and ``from_pretrained`` alike.

Our relative attention keeps transformers' per-head (H, heads, D) projection tensors, so every
entry is a rename (no fused tensors).
"""

from __future__ import annotations

import transformers

from ...conversion import KeyMap, VariantWeights, shared_config_fields
from ...conversion.key_map import head_renames
from ...conversion.variant_weights import require_values
from .configuration_xlnet import XLNetConfig

_THEIR_LAYER, _OUR_LAYER = "layer.{i}", "layers.{i}"
_ATTENTION_TENSORS = ("q", "k", "v", "o", "r", "r_w_bias", "r_r_bias", "r_s_bias", "seg_embed")

BACKBONE = (
    [
        ("word_embedding.weight", "word_embeddings.weight"),
        ("mask_emb", "mask_emb"),
    ]
    + [(f"{_THEIR_LAYER}.rel_attn.{name}", f"{_OUR_LAYER}.attention.{name}") for name in _ATTENTION_TENSORS]
    + head_renames(
        [
            (f"{_THEIR_LAYER}.rel_attn.layer_norm", f"{_OUR_LAYER}.attention_norm"),
            (f"{_THEIR_LAYER}.ff.layer_1", f"{_OUR_LAYER}.ffn.up"),
            (f"{_THEIR_LAYER}.ff.layer_2", f"{_OUR_LAYER}.ffn.down"),
            (f"{_THEIR_LAYER}.ff.layer_norm", f"{_OUR_LAYER}.ffn_norm"),
        ]
    )
)
SUMMARY_HEAD = head_renames(
    [("sequence_summary.summary", "classifier.summary.summary"), ("logits_proj", "classifier.logits_proj")]
)

KEY_MAP = KeyMap(
    backbone=BACKBONE,
    backbone_fused=[],
    heads={
        "Model": [],
        "LMHeadModel": head_renames([("lm_loss", "lm_loss")]),
        "ForSequenceClassification": SUMMARY_HEAD,
        "ForTokenClassification": head_renames([("classifier", "classifier")]),
        "ForQuestionAnswering": head_renames([("qa_outputs", "qa_outputs")]),
        "ForMultipleChoice": SUMMARY_HEAD,
    },
    their_prefix="transformer",
    our_prefix="transformer",
)

THEIR_CLASSES = {
    "Model": "XLNetModel",
    "LMHeadModel": "XLNetLMHeadModel",
    "ForSequenceClassification": "XLNetForSequenceClassification",
    "ForTokenClassification": "XLNetForTokenClassification",
    "ForQuestionAnswering": "XLNetForQuestionAnsweringSimple",
    "ForMultipleChoice": "XLNetForMultipleChoice",
}

# Our field -> transformers' XLNetConfig field, where the names differ.
_RENAMED = {
    "hidden_size": "d_model",
    "num_hidden_layers": "n_layer",
    "num_attention_heads": "n_head",
    "intermediate_size": "d_inner",
    "head_dim": "d_head",
    "hidden_act": "ff_activation",
    "hidden_dropout_prob": "dropout",
}


def config_to_theirs(config: XLNetConfig) -> transformers.XLNetConfig:
    """Our config -> transformers' XLNetConfig, refusing what transformers' XLNet cannot express."""
    require_values(
        config,
        "XLNet",
        {
            "pre_layer_norm": False,
            "norm_type": "layer_norm",
            "layer_sharing": "none",
            "gated_ffn": False,
        },
    )
    if config.head_dim not in (None, config.hidden_size // config.num_attention_heads):
        raise ValueError(f"transformers' XLNet needs d_head = d_model // n_head, got head_dim={config.head_dim}")
    fields = shared_config_fields(config, transformers.XLNetConfig)
    for ours, theirs in _RENAMED.items():
        fields.pop(ours, None)
        fields[theirs] = getattr(config, ours)
    fields["d_head"] = config.hidden_size // config.num_attention_heads
    return transformers.XLNetConfig(**fields)


class XLNetWeights(VariantWeights):
    """XLNet's VariantWeights: transformers' XLNetConfig fields are read under their own names."""

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        fields = super().config_dict_to_ours(config_dict)
        if "n_token" in config_dict:
            fields["vocab_size"] = config_dict["n_token"]
        # XLNet has one dropout rate; ours is read from hidden_dropout_prob, kept equal for clarity.
        fields["attention_probs_dropout_prob"] = fields.get("hidden_dropout_prob", 0.1)
        return fields


WEIGHTS = XLNetWeights(
    config_class=XLNetConfig,
    key_map=KEY_MAP,
    transformers_classes=THEIR_CLASSES,
    source_model_types=("xlnet",),
    config_to_theirs=config_to_theirs,
    renamed_fields={theirs: ours for ours, theirs in _RENAMED.items()},
)


def config_to_ours(config: transformers.XLNetConfig, **overrides) -> XLNetConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
