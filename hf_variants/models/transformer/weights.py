"""The original Transformer's weights against transformers' ``MarianModel`` / ``MarianMTModel``
configured as the paper's model (ReLU, post-LN, sin|cos positions, scaled shared embeddings): the
one explicit key map and the config translation. Read by ``from_transformers``,
``to_transformers`` and ``from_pretrained`` alike; it imports no modeling code.

Relative to ``model.`` on both sides (``{side}`` = encoder / decoder, ``{i}`` = layer):

====================================================  ===============================================
Marian                                                ours
====================================================  ===============================================
``shared`` (= ``{side}.embed_tokens``, ``lm_head``)    ``encoder.embeddings.word_embeddings`` (tied)
``{side}.embed_positions`` (fixed sin|cos table)      none: a buffer computed from the config
``{side}.layers.{i}.self_attn.{q,k,v}_proj``          ``{side}.encoder.layers.{i}.attention.qkv`` (fused)
``{side}.layers.{i}.self_attn.out_proj``              ``{side}.encoder.layers.{i}.attention.out``
``{side}.layers.{i}.self_attn_layer_norm``            ``{side}.encoder.layers.{i}.attention_norm``
``decoder.layers.{i}.encoder_attn.q_proj``            ``decoder.encoder.layers.{i}.cross_attention.query``
``decoder.layers.{i}.encoder_attn.{k,v}_proj``        ``decoder.encoder.layers.{i}.cross_attention.key_value`` (fused)
``decoder.layers.{i}.encoder_attn.out_proj``          ``decoder.encoder.layers.{i}.cross_attention.out``
``decoder.layers.{i}.encoder_attn_layer_norm``        ``decoder.encoder.layers.{i}.cross_attention_norm``
``{side}.layers.{i}.fc1`` / ``fc2``                   ``{side}.encoder.layers.{i}.ffn.up`` / ``ffn.down``
``{side}.layers.{i}.final_layer_norm``                ``{side}.encoder.layers.{i}.ffn_norm``
``final_logits_bias`` (a zero buffer)                 none (the paper's output layer has no bias)
====================================================  ===============================================

A Marian model with a non-zero ``final_logits_bias`` (Helsinki-NLP's OPUS-MT checkpoints) is not
this architecture: ``from_transformers`` refuses it (``from_pretrained`` lists the bias as an
unexpected key, as transformers reports any weight the model has no place for).
"""

from __future__ import annotations

import torch
import transformers

from ...conversion import KeyMap, StateDictAdapter, VariantWeights
from ...conversion.key_map import head_renames
from ...conversion.variant_weights import require_values
from .configuration_transformer import OriginalTransformerConfig


def _layer_renames(side: str) -> list[tuple[str, str]]:
    theirs, ours = f"{side}.layers.{{i}}", f"{side}.encoder.layers.{{i}}"
    modules = [
        ("self_attn.out_proj", "attention.out"),
        ("self_attn_layer_norm", "attention_norm"),
        ("fc1", "ffn.up"),
        ("fc2", "ffn.down"),
        ("final_layer_norm", "ffn_norm"),
    ]
    if side == "decoder":
        modules += [
            ("encoder_attn.q_proj", "cross_attention.query"),
            ("encoder_attn.out_proj", "cross_attention.out"),
            ("encoder_attn_layer_norm", "cross_attention_norm"),
        ]
    return head_renames([(f"{theirs}.{t}", f"{ours}.{o}") for t, o in modules])


def _fused(side: str) -> list[tuple[str, list[str]]]:
    theirs, ours = f"{side}.layers.{{i}}", f"{side}.encoder.layers.{{i}}"
    groups = [("self_attn", ("q_proj", "k_proj", "v_proj"), "attention.qkv")]
    if side == "decoder":
        groups.append(("encoder_attn", ("k_proj", "v_proj"), "cross_attention.key_value"))
    return [
        (f"{ours}.{target}.{param}", [f"{theirs}.{module}.{name}.{param}" for name in names])
        for module, names, target in groups
        for param in ("weight", "bias")
    ]


KEY_MAP = KeyMap(
    backbone=[
        ("shared.weight", "encoder.embeddings.word_embeddings.weight"),
        ("encoder.embed_tokens.weight", "encoder.embeddings.word_embeddings.weight"),
        ("decoder.embed_tokens.weight", "decoder.embeddings.word_embeddings.weight"),
    ]
    + _layer_renames("encoder")
    + _layer_renames("decoder"),
    backbone_fused=_fused("encoder") + _fused("decoder"),
    heads={"Model": [], "ForConditionalGeneration": [("lm_head.weight", "lm_head.weight")]},
    ignored={
        "Model": [r"(en|de)coder\.embed_positions\.weight"],
        "ForConditionalGeneration": [r"model\.(en|de)coder\.embed_positions\.weight", r"final_logits_bias"],
    },
    their_prefix="model",
    our_prefix="model",
)


def config_to_theirs(config: OriginalTransformerConfig) -> transformers.MarianConfig:
    """Our config -> a MarianConfig of the same network; ValueError where Marian differs."""
    require_values(
        config,
        "Marian",
        {
            "pre_layer_norm": False,
            "sinusoidal_layout": "concatenated",
            "position_embedding_type": "sinusoidal",
            "norm_type": "layer_norm",
            "use_bias": True,
            "gated_ffn": False,
            "head_dim": None,
            "attention_scale": None,
            "layer_sharing": "none",
            "layer_norm_eps": 1e-5,
            "tie_word_embeddings": True,
        },
    )
    return transformers.MarianConfig(
        vocab_size=config.vocab_size,
        d_model=config.hidden_size,
        encoder_layers=config.num_hidden_layers,
        decoder_layers=config.decoder_layers,
        encoder_attention_heads=config.num_attention_heads,
        decoder_attention_heads=config.num_attention_heads,
        encoder_ffn_dim=config.intermediate_size,
        decoder_ffn_dim=config.intermediate_size,
        activation_function=config.hidden_act,
        dropout=config.hidden_dropout_prob,
        attention_dropout=config.attention_probs_dropout_prob,
        activation_dropout=config.ffn_dropout_prob,
        max_position_embeddings=config.max_position_embeddings,
        init_std=config.initializer_range,
        scale_embedding=config.scale_embedding,
        pad_token_id=config.pad_token_id,
        eos_token_id=config.eos_token_id,
        bos_token_id=config.bos_token_id,
        decoder_start_token_id=config.decoder_start_token_id,
        forced_eos_token_id=None,
        use_cache=config.use_cache,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
    )


def config_dict_to_ours(config_dict: dict) -> dict:
    """A MarianConfig's dict -> our config's arguments (ValueError for what ours cannot express)."""
    if config_dict.get("encoder_attention_heads") != config_dict.get("decoder_attention_heads") or config_dict.get(
        "encoder_ffn_dim"
    ) != config_dict.get("decoder_ffn_dim"):
        raise ValueError("the Transformer has the same heads and FFN width in encoder and decoder")
    if not config_dict.get("share_encoder_decoder_embeddings", True) or config_dict.get("decoder_vocab_size") not in (
        None,
        config_dict.get("vocab_size"),
    ):
        raise ValueError("the Transformer shares one vocabulary between source and target")
    return dict(
        vocab_size=config_dict["vocab_size"],
        hidden_size=config_dict["d_model"],
        num_hidden_layers=config_dict["encoder_layers"],
        decoder_layers=config_dict["decoder_layers"],
        num_attention_heads=config_dict["encoder_attention_heads"],
        intermediate_size=config_dict["encoder_ffn_dim"],
        hidden_act=config_dict.get("activation_function", "gelu"),
        hidden_dropout_prob=config_dict.get("dropout", 0.1),
        attention_probs_dropout_prob=config_dict.get("attention_dropout", 0.0),
        ffn_dropout_prob=config_dict.get("activation_dropout", 0.0),
        max_position_embeddings=config_dict.get("max_position_embeddings", 1024),
        initializer_range=config_dict.get("init_std", 0.02),
        scale_embedding=config_dict.get("scale_embedding", False),
        sinusoidal_layout="concatenated",
        layer_norm_eps=1e-5,
        pad_token_id=config_dict.get("pad_token_id"),
        eos_token_id=config_dict.get("eos_token_id"),
        bos_token_id=config_dict.get("bos_token_id"),
        decoder_start_token_id=config_dict.get("decoder_start_token_id"),
        use_cache=config_dict.get("use_cache", True),
        # MarianMTModel's loss is plain cross-entropy: a converted model keeps the loss it had
        # (set label_smoothing=0.1 for the paper's training recipe).
        label_smoothing=0.0,
        **{k: config_dict[k] for k in ("id2label", "label2id") if config_dict.get(k) is not None},
    )


class _ZeroOutputBiasAdapter(StateDictAdapter):
    """The key map's adapter, refusing a Marian model whose output bias is not zero (ours has none)."""

    def to_ours(self, theirs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        bias = theirs.get("final_logits_bias")
        if bias is not None and bool(bias.any()):
            raise ValueError(
                "this Marian model has a non-zero final_logits_bias (e.g. an OPUS-MT checkpoint); the original "
                "Transformer's output layer has no bias, so it cannot be converted"
            )
        return super().to_ours(theirs)


class TransformerWeights(VariantWeights):
    """VariantWeights with Marian's config names (d_model, encoder_layers ...) translated explicitly."""

    def adapter(self, head: str) -> StateDictAdapter:
        plain = super().adapter(head)
        return _ZeroOutputBiasAdapter(plain.renames, plain.fused, plain.ignored, plain.transposed)

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        if config_dict.get("model_type") == self.model_type:
            return {k: v for k, v in config_dict.items() if k not in ("model_type", "architectures")}
        return config_dict_to_ours(config_dict)


WEIGHTS = TransformerWeights(
    config_class=OriginalTransformerConfig,
    key_map=KEY_MAP,
    transformers_classes={"Model": "MarianModel", "ForConditionalGeneration": "MarianMTModel"},
    source_model_types=("marian",),
    config_to_theirs=config_to_theirs,
    theirs_built_by_init=(
        r"model\.(en|de)coder\.embed_positions\.weight",
        r"(en|de)coder\.embed_positions\.weight",
        r"final_logits_bias",
    ),
)


def config_to_ours(config: transformers.MarianConfig, **overrides) -> OriginalTransformerConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
