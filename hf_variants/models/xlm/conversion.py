"""XLM <-> transformers' XLM: config translation and the explicit weight key map."""

from __future__ import annotations

import transformers

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from . import modeling_xlm as ours
from .configuration_xlm import SUMMARY_TYPES, XLMConfig


def encoder_renames(prefix: str) -> list[tuple[str, str]]:
    """transformers' XLMModel names -> ours, for a backbone stored under ``prefix`` ("" or "transformer.")."""
    theirs, mine = prefix, f"{prefix}encoder.layers.{{i}}"
    renames = [
        (f"{theirs}embeddings.weight", f"{prefix}embeddings.word_embeddings.weight"),
        (f"{theirs}position_embeddings.weight", f"{prefix}embeddings.position_embeddings.weight"),
        (f"{theirs}lang_embeddings.weight", f"{prefix}embeddings.lang_embeddings.weight"),
    ]
    for param in ("weight", "bias"):
        renames += [
            (f"{theirs}layer_norm_emb.{param}", f"{prefix}embeddings.layer_norm.{param}"),
            (f"{theirs}attentions.{{i}}.out_lin.{param}", f"{mine}.attention.out.{param}"),
            (f"{theirs}layer_norm1.{{i}}.{param}", f"{mine}.attention_norm.{param}"),
            (f"{theirs}ffns.{{i}}.lin1.{param}", f"{mine}.ffn.up.{param}"),
            (f"{theirs}ffns.{{i}}.lin2.{param}", f"{mine}.ffn.down.{param}"),
            (f"{theirs}layer_norm2.{{i}}.{param}", f"{mine}.ffn_norm.{param}"),
        ]
    return renames


def fused_qkv(prefix: str) -> list[tuple[str, list[str]]]:
    return [
        (f"{prefix}encoder.layers.{{i}}.attention.qkv.{param}",
         [f"{prefix}attentions.{{i}}.{name}.{param}" for name in ("q_lin", "k_lin", "v_lin")])
        for param in ("weight", "bias")
    ]


def head_renames(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(f"{theirs}.{p}", f"{mine}.{p}") for theirs, mine in pairs for p in ("weight", "bias")]


# head name -> (their class name, head renames)
HEADS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "Model": ("XLMModel", []),
    "WithLMHeadModel": ("XLMWithLMHeadModel", head_renames([("pred_layer.proj", "mlm_head.decoder")])),
    "ForSequenceClassification": ("XLMForSequenceClassification", head_renames([("sequence_summary.summary", "classifier.summary")])),
    "ForTokenClassification": ("XLMForTokenClassification", head_renames([("classifier", "classifier")])),
    "ForQuestionAnsweringSimple": ("XLMForQuestionAnsweringSimple", head_renames([("qa_outputs", "qa_outputs")])),
    "ForMultipleChoice": ("XLMForMultipleChoice", head_renames([
        ("sequence_summary.summary", "classifier.sequence_summary.summary"),
        ("logits_proj", "classifier.logits_proj"),
    ])),
}


def xlm_adapter(head: str) -> StateDictAdapter:
    # The bare XLMModel's keys have no "transformer." prefix, in transformers' state dict and in ours.
    prefix = "" if head == "Model" else "transformer."
    return StateDictAdapter(renames=encoder_renames(prefix) + HEADS[head][1], fused=fused_qkv(prefix))


def config_to_ours(config: transformers.XLMConfig) -> XLMConfig:
    if config.asm:
        raise ValueError("transformers' XLM with asm=True (adaptive softmax) has no hf-variants equivalent")
    if config.summary_type not in SUMMARY_TYPES:
        raise ValueError(f"summary_type {config.summary_type!r} has no hf-variants equivalent (use one of {SUMMARY_TYPES})")
    fields = shared_config_fields(config, XLMConfig)
    fields.update(
        hidden_size=config.emb_dim,
        num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads,
        intermediate_size=4 * config.emb_dim,  # fixed in XLM
        hidden_act="gelu" if config.gelu_activation else "relu",
        hidden_dropout_prob=config.dropout,
        attention_probs_dropout_prob=config.attention_dropout,
        position_embedding_type="sinusoidal" if config.sinusoidal_embeddings else "learned",
        is_decoder=config.causal,
        initializer_range=config.init_std,
        lang2id=getattr(config, "lang2id", None),
        id2lang=getattr(config, "id2lang", None),
    )
    return XLMConfig(**fields)


def config_to_theirs(config: XLMConfig) -> transformers.XLMConfig:
    required = {
        "pre_layer_norm": (config.pre_layer_norm, False),
        "layer_sharing": (config.layer_sharing, "none"),
        "norm_type": (config.norm_type, "layer_norm"),
        "use_bias": (config.use_bias, True),
        "gated_ffn": (config.gated_ffn, False),
        "ffn_dropout_prob": (config.ffn_dropout_prob, 0.0),
        "attention_scale": (config.attention_scale, None),
        "intermediate_size": (config.intermediate_size, 4 * config.hidden_size),
    }
    for name, (value, needed) in required.items():
        if value != needed:
            raise ValueError(f"transformers' XLM has no equivalent of {name}={value!r} (needs {needed!r})")
    if config.hidden_act not in ("gelu", "relu"):
        raise ValueError(f"transformers' XLM has gelu or relu only, not hidden_act={config.hidden_act!r}")
    if config.position_embedding_type not in ("learned", "sinusoidal"):
        raise ValueError(f"transformers' XLM has no position_embedding_type={config.position_embedding_type!r}")
    if config.head_dim not in (None, config.hidden_size // config.num_attention_heads):
        raise ValueError(f"transformers' XLM has no equivalent of head_dim={config.head_dim}")
    fields = shared_config_fields(config, transformers.XLMConfig)
    fields.pop("is_decoder", None)  # XLM's causal flag is `causal`; is_decoder would mean a cross-attention decoder
    fields.update(
        emb_dim=config.hidden_size,
        n_layers=config.num_hidden_layers,
        n_heads=config.num_attention_heads,
        dropout=config.hidden_dropout_prob,
        attention_dropout=config.attention_probs_dropout_prob,
        gelu_activation=config.hidden_act == "gelu",
        sinusoidal_embeddings=config.position_embedding_type == "sinusoidal",
        causal=config.is_decoder,
        init_std=config.initializer_range,
    )
    for name in ("lang2id", "id2lang"):
        if getattr(config, name) is not None:
            fields[name] = getattr(config, name)
    return transformers.XLMConfig(**fields)


for _head, (_their_name, _) in HEADS.items():
    register_conversion(
        ConversionPair(
            ours=getattr(ours, _their_name),
            theirs=getattr(transformers, _their_name),
            adapter=xlm_adapter(_head),
            config_to_ours=config_to_ours,
            config_to_theirs=config_to_theirs,
        )
    )
