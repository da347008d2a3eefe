"""ALBERT's weights: the one explicit key map between transformers' ALBERT and ours, and the
config translation. Read by ``from_transformers``, ``to_transformers`` and ``from_pretrained``
alike (see ``hf_variants.conversion``); it imports no modeling code.

transformers' layout differs from ours in three places, each mapped here explicitly:

- the E -> H projection sits in its encoder (``encoder.embedding_hidden_mapping_in``); ours is
  the embeddings' ``projection``;
- its layers are ``encoder.albert_layer_groups.{g}.albert_layers.{j}`` (group g, inner layer j);
  ours are AlbertEncoder's stored layers ``encoder.layers.{g * inner_group_num + j}``. With one
  inner layer per group (every released checkpoint) that is an ``{i}`` rename, the key map
  below; with more, the names are listed per layer for the config at hand
  (:meth:`AlbertWeights.adapter_for_config`), which ``from_pretrained``'s load-time renames cannot
  do, so it refuses such checkpoints with a ValueError naming the route that works;
- its query / key / value are separate; ours are one fused ``qkv`` (concatenated along dim 0).

transformers has no per-sub-block sharing: layer_sharing "attention" / "ffn" do not convert;
"none" converts as transformers' one group per layer (num_hidden_groups = num_hidden_layers).
"""

from __future__ import annotations

from dataclasses import dataclass

import transformers
from transformers import PreTrainedConfig

from ...conversion import KeyMap, StateDictAdapter, VariantWeights, shared_config_fields
from .configuration_albert import AlbertConfig

# Inside one layer: transformers' AlbertLayer name -> ours (TransformerLayer).
LAYER_PARTS = [
    ("attention.dense", "attention.out"),
    ("attention.LayerNorm", "attention_norm"),
    ("ffn", "ffn.up"),
    ("ffn_output", "ffn.down"),
    ("full_layer_layer_norm", "ffn_norm"),
]
# Inside the backbone, outside the layers.
BACKBONE_PARTS = [
    ("embeddings.LayerNorm", "embeddings.layer_norm"),
    ("encoder.embedding_hidden_mapping_in", "embeddings.projection"),
    ("pooler", "pooler.dense"),
]
EMBEDDING_TABLES = ["word_embeddings", "position_embeddings", "token_type_embeddings"]


def weight_and_bias(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(their module, our module) -> weight and bias renames."""
    return [(f"{theirs}.{p}", f"{ours}.{p}") for theirs, ours in pairs for p in ("weight", "bias")]


def stored_layers(num_hidden_groups: int, inner_group_num: int) -> list[tuple[str, str]]:
    """(transformers layer name, our layer name) of every stored layer, as templates."""
    if inner_group_num == 1:
        return [("encoder.albert_layer_groups.{i}.albert_layers.0", "encoder.layers.{i}")]
    return [
        (
            f"encoder.albert_layer_groups.{group}.albert_layers.{inner}",
            f"encoder.layers.{group * inner_group_num + inner}",
        )
        for group in range(num_hidden_groups)
        for inner in range(inner_group_num)
    ]


def backbone_names(layers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[tuple[str, list[str]]]]:
    """(renames, fused) inside the backbone, relative to it. The per-layer renames come before the
    fused q/k/v, whose load-time rename covers the whole ``attention.`` prefix (see KeyMap)."""
    renames = [(f"embeddings.{t}.weight", f"embeddings.{t}.weight") for t in EMBEDDING_TABLES]
    renames += weight_and_bias(BACKBONE_PARTS)
    fused = []
    for their_layer, our_layer in layers:
        renames += weight_and_bias([(f"{their_layer}.{t}", f"{our_layer}.{o}") for t, o in LAYER_PARTS])
        fused += [
            (
                f"{our_layer}.attention.qkv.{p}",
                [f"{their_layer}.attention.{name}.{p}" for name in ("query", "key", "value")],
            )
            for p in ("weight", "bias")
        ]
    return renames, fused


MLM_HEAD = weight_and_bias(
    [("predictions.dense", "mlm_head.transform.dense"), ("predictions.LayerNorm", "mlm_head.transform.layer_norm")]
) + [("predictions.decoder.weight", "mlm_head.decoder.weight"), ("predictions.bias", "mlm_head.decoder.bias")]
# transformers keeps the decoder bias under two names (tied); ours has one.
MLM_IGNORED = [r"predictions\.decoder\.bias"]

# ForPreTraining first: its "sop_classifier.classifier" must be renamed before the plain
# "classifier" rename of the classification heads could touch it (load-time renames apply in order).
HEADS = {
    "Model": [],
    "ForPreTraining": MLM_HEAD + weight_and_bias([("sop_classifier.classifier", "sop_classifier.out_proj")]),
    "ForMaskedLM": MLM_HEAD,
    "ForSequenceClassification": weight_and_bias([("classifier", "classifier.out_proj")]),
    "ForTokenClassification": weight_and_bias([("classifier", "classifier")]),
    "ForQuestionAnswering": weight_and_bias([("qa_outputs", "qa_outputs")]),
    "ForMultipleChoice": weight_and_bias([("classifier", "classifier.out_proj")]),
}
IGNORED = {"ForPreTraining": MLM_IGNORED, "ForMaskedLM": MLM_IGNORED}


def key_map(num_hidden_groups: int = 1, inner_group_num: int = 1) -> KeyMap:
    renames, fused = backbone_names(stored_layers(num_hidden_groups, inner_group_num))
    return KeyMap(
        backbone=renames, backbone_fused=fused, heads=HEADS, their_prefix="albert", our_prefix="albert", ignored=IGNORED
    )


KEY_MAP = key_map()  # one layer per group: every released checkpoint, and from_pretrained's renames


def config_to_theirs(config: AlbertConfig) -> transformers.AlbertConfig:
    unsupported = {
        "layer_sharing": (config.layer_sharing in ("all", "none"), "all or none"),
        "pre_layer_norm": (not config.pre_layer_norm, False),
        "position_embedding_type": (config.position_embedding_type == "learned", "learned"),
        "norm_type": (config.norm_type == "layer_norm", "layer_norm"),
        "use_bias": (config.use_bias, True),
        "gated_ffn": (not config.gated_ffn, False),
        "attention_scale": (config.attention_scale is None, None),
        "head_dim": (config.head_dim in (None, config.hidden_size // config.num_attention_heads), None),
        "summary_type": (config.summary_type == "first", "first"),
        "type_vocab_size": (config.type_vocab_size > 0, "> 0"),
        "is_decoder": (not config.is_decoder, False),
    }
    for name, (supported, required) in unsupported.items():
        if not supported:
            raise ValueError(
                f"transformers' ALBERT has no equivalent of {name}={getattr(config, name)!r} (needs {required})"
            )
    fields = shared_config_fields(config, transformers.AlbertConfig)
    fields.update(
        embedding_size=config.embedding_size or config.hidden_size,
        classifier_dropout_prob=config.hidden_dropout_prob
        if config.classifier_dropout is None
        else config.classifier_dropout,
    )
    if config.layer_sharing == "none":  # one group per layer
        fields.update(num_hidden_groups=config.num_hidden_layers, inner_group_num=1)
    return transformers.AlbertConfig(**fields)


@dataclass(frozen=True)
class AlbertWeights(VariantWeights):
    """ALBERT's weights: transformers' grouping read into ``layer_sharing``, and adapters for any grouping."""

    def _fields(self, config_dict: dict) -> dict:
        fields = super().config_dict_to_ours(config_dict)
        if "classifier_dropout_prob" in config_dict:
            fields["classifier_dropout"] = config_dict["classifier_dropout_prob"]
        layers = config_dict.get("num_hidden_layers", AlbertConfig.num_hidden_layers)
        groups, inner = config_dict.get("num_hidden_groups", 1), config_dict.get("inner_group_num", 1)
        if groups == layers > 1 and inner == 1:  # one group per layer: nothing is shared
            fields.update(layer_sharing="none", num_hidden_groups=1, inner_group_num=1)
        else:
            fields["layer_sharing"] = "all"
        return fields

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        """A transformers ALBERT config.json read by ``from_pretrained`` (weights renamed on load)."""
        if config_dict.get("inner_group_num", 1) > 1:
            raise ValueError(
                f"this transformers ALBERT checkpoint has inner_group_num={config_dict['inner_group_num']}: its layer "
                "names cannot be renamed on load; convert it with "
                "hf_variants.from_transformers(transformers.AlbertModel.from_pretrained(path)) (or the Albert* head class)"
            )
        return self._fields(config_dict)

    def config_to_ours(self, config: PreTrainedConfig, **overrides) -> AlbertConfig:
        """A transformers AlbertConfig (any grouping: from_transformers maps the weights per config) -> ours."""
        return self.config_class(**{**self._fields(config.to_dict()), **overrides})

    def adapter_for_config(self, head: str, config: PreTrainedConfig) -> StateDictAdapter:
        return key_map(config.num_hidden_groups, config.inner_group_num).adapter(head)


WEIGHTS = AlbertWeights(
    config_class=AlbertConfig,
    key_map=KEY_MAP,
    transformers_classes={head: f"Albert{head}" for head in HEADS},
    source_model_types=("albert",),
    config_to_theirs=config_to_theirs,
)


def config_to_ours(config: transformers.AlbertConfig, **overrides) -> AlbertConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
