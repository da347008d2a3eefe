"""XLM's weights: the one explicit key map between transformers' ``XLM*`` classes and ours, and
the config translation both ways. Read by ``from_transformers``, ``to_transformers`` and
``from_pretrained`` alike (see ``hf_variants.conversion``); it imports no modeling code.

==================================  ===================================  =====================================
transformers (under ``transformer.``)  key                               ours
==================================  ===================================  =====================================
XLMModel                            ``embeddings``                       ``embeddings.word_embeddings``
                                    ``position_embeddings``              ``embeddings.position_embeddings``
                                    ``lang_embeddings``                  ``embeddings.lang_embeddings``
                                    ``layer_norm_emb``                   ``embeddings.layer_norm``
                                    ``attentions.{i}.q_lin/k_lin/v_lin``  ``encoder.layers.{i}.attention.qkv`` (fused)
                                    ``attentions.{i}.out_lin``           ``encoder.layers.{i}.attention.out``
                                    ``layer_norm1.{i}`` / ``layer_norm2.{i}``  ``...attention_norm`` / ``...ffn_norm``
                                    ``ffns.{i}.lin1`` / ``ffns.{i}.lin2``  ``...ffn.up`` / ``...ffn.down``
XLMWithLMHeadModel                  ``pred_layer.proj`` (weight tied)    ``mlm_head.decoder``
XLMForSequenceClassification        ``sequence_summary.summary``         ``classifier.summary``
XLMForMultipleChoice                ``sequence_summary.summary``,        ``classifier.summary``,
                                    ``logits_proj``                      ``classifier.logits_proj``
XLMForTokenClassification           ``classifier``                       ``classifier``
XLMForQuestionAnsweringSimple       ``qa_outputs``                       ``qa_outputs``
==================================  ===================================  =====================================

transformers' XLMConfig names its fields otherwise (``emb_dim``, ``n_layers``, ``gelu_activation``,
``sinusoidal_embeddings``, ``causal``, ...): :class:`XLMWeights` translates them.
"""

from __future__ import annotations

import transformers

from ...conversion import KeyMap, VariantWeights, shared_config_fields
from ...conversion.key_map import head_renames
from ...conversion.variant_weights import require_values
from .configuration_xlm import SUMMARY_TYPES, XLMConfig

_OUR_LAYER = "encoder.layers.{i}"

BACKBONE = [
    ("embeddings.weight", "embeddings.word_embeddings.weight"),
    ("position_embeddings.weight", "embeddings.position_embeddings.weight"),
    ("lang_embeddings.weight", "embeddings.lang_embeddings.weight"),
] + head_renames(
    [
        ("layer_norm_emb", "embeddings.layer_norm"),
        ("attentions.{i}.out_lin", f"{_OUR_LAYER}.attention.out"),
        ("layer_norm1.{i}", f"{_OUR_LAYER}.attention_norm"),
        ("ffns.{i}.lin1", f"{_OUR_LAYER}.ffn.up"),
        ("ffns.{i}.lin2", f"{_OUR_LAYER}.ffn.down"),
        ("layer_norm2.{i}", f"{_OUR_LAYER}.ffn_norm"),
    ]
)
BACKBONE_FUSED = [
    (
        f"{_OUR_LAYER}.attention.qkv.{param}",
        [f"attentions.{{i}}.{name}.{param}" for name in ("q_lin", "k_lin", "v_lin")],
    )
    for param in ("weight", "bias")
]
LM_HEAD = head_renames([("pred_layer.proj", "mlm_head.decoder")])

KEY_MAP = KeyMap(
    backbone=BACKBONE,
    backbone_fused=BACKBONE_FUSED,
    # ForMaskedLM before ForPreTraining: both are XLMWithLMHeadModel on either side.
    heads={
        "Model": [],
        "ForMaskedLM": LM_HEAD,
        "ForPreTraining": LM_HEAD,
        "ForSequenceClassification": head_renames([("sequence_summary.summary", "classifier.summary")]),
        "ForTokenClassification": head_renames([("classifier", "classifier")]),
        "ForQuestionAnswering": head_renames([("qa_outputs", "qa_outputs")]),
        "ForMultipleChoice": head_renames(
            [("sequence_summary.summary", "classifier.summary"), ("logits_proj", "classifier.logits_proj")]
        ),
    },
    their_prefix="transformer",
    our_prefix="transformer",
)

THEIR_CLASSES = {
    "Model": "XLMModel",
    "ForMaskedLM": "XLMWithLMHeadModel",
    "ForPreTraining": "XLMWithLMHeadModel",
    "ForSequenceClassification": "XLMForSequenceClassification",
    "ForTokenClassification": "XLMForTokenClassification",
    "ForQuestionAnswering": "XLMForQuestionAnsweringSimple",  # what transformers' AutoModelForQuestionAnswering builds
    "ForMultipleChoice": "XLMForMultipleChoice",
}


def config_to_theirs(config: XLMConfig) -> transformers.XLMConfig:
    """Our config -> transformers' XLMConfig, refusing what transformers' XLM cannot express."""
    require_values(
        config,
        "XLM",
        {
            "pre_layer_norm": False,
            "layer_sharing": "none",
            "norm_type": "layer_norm",
            "use_bias": True,
            "gated_ffn": False,
            "ffn_dropout_prob": 0.0,
            "attention_scale": None,
            "intermediate_size": 4 * config.hidden_size,  # fixed in transformers' XLM
        },
    )
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


# transformers' XLMConfig field -> ours, where only the name differs (lang2id / id2lang: the same
# name, read only when set).
RENAMED_FIELDS = {
    "emb_dim": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "init_std": "initializer_range",
    "causal": "is_decoder",
    "lang2id": "lang2id",
    "id2lang": "id2lang",
}


class XLMWeights(VariantWeights):
    """XLM's VariantWeights: transformers' XLMConfig fields are read under their own names."""

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        """transformers' XLM config.json (or XLMConfig.to_dict()) -> our config's arguments."""
        if config_dict.get("asm"):
            raise ValueError("transformers' XLM with asm=True (adaptive softmax) has no hf-variants equivalent")
        summary_type = config_dict.get("summary_type", "first")
        if summary_type not in SUMMARY_TYPES:
            raise ValueError(
                f"summary_type {summary_type!r} has no hf-variants equivalent (use one of {SUMMARY_TYPES})"
            )
        fields = super().config_dict_to_ours(config_dict)
        if "gelu_activation" in config_dict:
            fields["hidden_act"] = "gelu" if config_dict["gelu_activation"] else "relu"
        if "sinusoidal_embeddings" in config_dict:
            fields["position_embedding_type"] = "sinusoidal" if config_dict["sinusoidal_embeddings"] else "learned"
        if "hidden_size" in fields:
            fields["intermediate_size"] = 4 * fields["hidden_size"]  # fixed in XLM
        return fields


WEIGHTS = XLMWeights(
    config_class=XLMConfig,
    key_map=KEY_MAP,
    transformers_classes=THEIR_CLASSES,
    source_model_types=("xlm",),
    config_to_theirs=config_to_theirs,
    renamed_fields=RENAMED_FIELDS,
)


def config_to_ours(config: transformers.XLMConfig, **overrides) -> XLMConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
