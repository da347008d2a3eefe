"""T5's weights: the one explicit key map between transformers' T5 classes and ours, and the config
translation both ways. Imports no modeling code.

Names are relative to the encoder-decoder (transformers' T5Model / ours): their ``shared``,
``encoder.block.{i}.layer.{j}...`` and ``encoder.final_layer_norm`` are our stacks'
``embeddings``, ``encoder.layers.{i}`` and ``encoder.final_layer_norm``. transformers keeps the
relative-position bias in block 0's self-attention; ours is each stack's ``position_bias``.
transformers' T5ForConditionalGeneration and T5ForQuestionAnswering keep the stacks at the model
root, ours under ``transformer``; both keep them under ``transformer`` in the classification heads.
"""

from __future__ import annotations

import transformers

from ...conversion import KeyMap, VariantWeights, shared_config_fields
from .configuration_t5 import T5Config

_FFN_LAYER = {"encoder": 1, "decoder": 2}  # index of the FFN sub-layer in a transformers T5 block


def _stack_renames(stack: str) -> list[tuple[str, str]]:
    block, layer = f"{stack}.block.{{i}}.layer", f"{stack}.encoder.layers.{{i}}"
    ffn = f"{block}.{_FFN_LAYER[stack]}"
    renames = [
        (
            f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
            f"{stack}.position_bias.embedding.weight",
        ),
        (f"{block}.0.layer_norm.weight", f"{layer}.attention_norm.weight"),
        (f"{block}.0.SelfAttention.o.weight", f"{layer}.attention.out.weight"),
        (f"{ffn}.layer_norm.weight", f"{layer}.ffn_norm.weight"),
        (f"{ffn}.DenseReluDense.wi.weight", f"{layer}.ffn.up.weight"),  # v1.0 (ReLU)
        (f"{ffn}.DenseReluDense.wi_0.weight", f"{layer}.ffn.gate.weight"),  # v1.1: act(wi_0 x) * wi_1 x
        (f"{ffn}.DenseReluDense.wi_1.weight", f"{layer}.ffn.up.weight"),
        (f"{ffn}.DenseReluDense.wo.weight", f"{layer}.ffn.down.weight"),
        (f"{stack}.final_layer_norm.weight", f"{stack}.encoder.final_layer_norm.weight"),
    ]
    if stack == "decoder":
        renames += [
            (f"{block}.1.layer_norm.weight", f"{layer}.cross_attention_norm.weight"),
            (f"{block}.1.EncDecAttention.q.weight", f"{layer}.cross_attention.query.weight"),
            (f"{block}.1.EncDecAttention.o.weight", f"{layer}.cross_attention.out.weight"),
        ]
    return renames


BACKBONE = (
    [
        ("shared.weight", "encoder.embeddings.word_embeddings.weight"),
        # Tied copies of `shared` (the first rename above is the one used towards transformers).
        ("encoder.embed_tokens.weight", "encoder.embeddings.word_embeddings.weight"),
        ("decoder.embed_tokens.weight", "decoder.embeddings.word_embeddings.weight"),
    ]
    + _stack_renames("encoder")
    + _stack_renames("decoder")
)

# Our fused projections = transformers' separate ones concatenated along dim 0.
BACKBONE_FUSED = [
    (
        f"{stack}.encoder.layers.{{i}}.attention.qkv.weight",
        [f"{stack}.block.{{i}}.layer.0.SelfAttention.{n}.weight" for n in "qkv"],
    )
    for stack in ("encoder", "decoder")
] + [
    (
        "decoder.encoder.layers.{i}.cross_attention.key_value.weight",
        [f"decoder.block.{{i}}.layer.1.EncDecAttention.{n}.weight" for n in "kv"],
    ),
]

HEADS = (
    "Model",
    "ForConditionalGeneration",
    "EncoderModel",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
)
# Old checkpoints carry a cross-attention relative bias that T5 never uses.
UNUSED = [r"(transformer\.)?decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight"]

KEY_MAP = KeyMap(
    backbone=BACKBONE,
    backbone_fused=BACKBONE_FUSED,
    heads={
        "Model": [],
        "ForConditionalGeneration": [("lm_head.weight", "lm_head.weight")],
        "EncoderModel": [],
        "ForSequenceClassification": [
            (f"classification_head.{m}.{p}", f"classification_head.{m}.{p}")
            for m in ("dense", "out_proj")
            for p in ("weight", "bias")
        ],
        "ForTokenClassification": [(f"classifier.{p}", f"classifier.{p}") for p in ("weight", "bias")],
        "ForQuestionAnswering": [(f"qa_outputs.{p}", f"qa_outputs.{p}") for p in ("weight", "bias")],
    },
    ignored={head: UNUSED for head in HEADS},
    their_prefix="transformer",
    our_prefix="transformer",
    head_prefixes={
        "EncoderModel": ("", ""),
        "ForConditionalGeneration": ("", "transformer"),
        "ForQuestionAnswering": ("", "transformer"),
    },
)

# transformers' T5 name -> ours, for the fields that only differ by name.
_RENAMED_FIELDS = {
    "d_model": "hidden_size",
    "d_kv": "head_dim",
    "d_ff": "intermediate_size",
    "num_heads": "num_attention_heads",
    "num_layers": "num_hidden_layers",
    "num_decoder_layers": "decoder_layers",
    "layer_norm_epsilon": "layer_norm_eps",
}


def feed_forward_proj_to_ours(feed_forward_proj: str) -> dict:
    """transformers' ``feed_forward_proj`` ("relu", "gated-gelu", "gated-silu" ...) -> our FFN fields.
    "gated-gelu" means the tanh GELU ("gelu_new"), as in transformers."""
    parts = feed_forward_proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ValueError(f"feed_forward_proj must be 'ACT' or 'gated-ACT', got {feed_forward_proj!r}")
    if feed_forward_proj == "gated-gelu":
        return {"hidden_act": "gelu_new", "gated_ffn": True}
    return {"hidden_act": parts[-1], "gated_ffn": len(parts) == 2}


def feed_forward_proj_to_theirs(config: T5Config) -> str:
    if not config.gated_ffn:
        return config.hidden_act
    if config.hidden_act == "gelu_new":
        return "gated-gelu"
    if config.hidden_act == "gelu":
        raise ValueError(
            "transformers' T5 reads 'gated-gelu' as the tanh GELU: use hidden_act='gelu_new' for a gated GELU"
        )
    return f"gated-{config.hidden_act}"


class T5Weights(VariantWeights):
    """VariantWeights whose config translation renames T5's fields (d_model -> hidden_size ...)."""

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        fields = super().config_dict_to_ours(config_dict)
        if "dropout_rate" in config_dict:
            for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "ffn_dropout_prob"):
                fields[name] = config_dict["dropout_rate"]
        fields.update(feed_forward_proj_to_ours(config_dict.get("feed_forward_proj", "relu")))
        # transformers >= 5 always ties and records the rescale separately; older configs say
        # tie_word_embeddings=false for v1.1 (untied, no rescale), which ours reads as is.
        fields["tie_word_embeddings"] = config_dict.get("tie_word_embeddings", True)
        fields["scale_decoder_outputs"] = config_dict.get("scale_decoder_outputs")
        return fields


def config_to_theirs(config: T5Config) -> transformers.T5Config:
    dropouts = {config.hidden_dropout_prob, config.attention_probs_dropout_prob, config.ffn_dropout_prob}
    if len(dropouts) != 1:
        raise ValueError(f"transformers' T5 has one dropout_rate; this config has {sorted(dropouts)}")
    if config.layer_sharing != "none":
        raise ValueError(f"transformers' T5 has no equivalent of layer_sharing={config.layer_sharing!r}")
    if not config.tie_word_embeddings and config.rescales_output:
        raise ValueError(
            "transformers' T5 rescales the output only with tied embeddings (scale_decoder_outputs=True "
            "needs tie_word_embeddings=True)"
        )
    fields = shared_config_fields(config, transformers.T5Config)
    for name in ("tie_word_embeddings", "is_decoder", "scale_decoder_outputs"):
        fields.pop(name, None)
    fields.update({theirs: getattr(config, ours) for theirs, ours in _RENAMED_FIELDS.items()})
    # transformers' T5 always ties its output layer; tie_word_embeddings=False only turns the rescale off
    # (an untied output of ours converts exactly only while it equals the embeddings).
    return transformers.T5Config(
        **fields,
        dropout_rate=config.hidden_dropout_prob,
        decoder_start_token_id=config.decoder_start_token_id,  # read by T5's classification and QA heads
        feed_forward_proj=feed_forward_proj_to_theirs(config),
        tie_word_embeddings=config.rescales_output,
    )


WEIGHTS = T5Weights(
    config_class=T5Config,
    key_map=KEY_MAP,
    transformers_classes={head: f"T5{head}" for head in HEADS},
    source_model_types=("t5",),
    config_to_theirs=config_to_theirs,
    renamed_fields=_RENAMED_FIELDS,
)
