"""GPT's weights: the explicit key maps between transformers' ``GPT2*`` / ``OpenAIGPT*`` classes and
ours, and the config translation both ways. Read by ``from_transformers``, ``to_transformers`` and
``from_pretrained`` alike (see ``hf_variants.conversion``); it imports no modeling code.

Both transformers families name the backbone ``transformer.`` (ours too) and its layers
``h.{i}`` with GPT's original names; they differ in the embeddings and GPT-2's final LayerNorm:

==============================  =================================  ====================================
GPT-2 (``GPT2*``)               OpenAI GPT (``OpenAIGPT*``)        ours
==============================  =================================  ====================================
``wte``                         ``tokens_embed``                   ``embeddings.word_embeddings``
``wpe``                         ``positions_embed``                ``embeddings.position_embeddings``
``h.{i}.ln_1`` / ``ln_2``       the same (after each sub-block)    ``encoder.layers.{i}.attention_norm`` / ``ffn_norm``
``h.{i}.attn.c_attn`` (T)       the same                           ``encoder.layers.{i}.attention.qkv``
``h.{i}.attn.c_proj`` (T)       the same                           ``encoder.layers.{i}.attention.out``
``h.{i}.mlp.c_fc`` (T)          the same                           ``encoder.layers.{i}.ffn.up``
``h.{i}.mlp.c_proj`` (T)        the same                           ``encoder.layers.{i}.ffn.down``
``ln_f``                        (none: post-LN)                    ``encoder.final_layer_norm``
``lm_head`` (tied)              ``lm_head`` (tied)                 ``lm_head`` (tied)
``score`` (no bias)             ``score`` (no bias)                ``classifier.out_proj``
``classifier`` / ``qa_outputs``  (no such heads)                   the same names
==============================  =================================  ====================================

(T): transformers' ``Conv1D`` keeps the weight as (in, out), our ``nn.Linear`` as (out, in): the
key map transposes these (``backbone_transposed``). ``c_attn`` is [query; key; value] along its
output dimension, as our fused ``qkv``. Which family a model converts to follows its config
(``pre_layer_norm``: GPT-2; post-LN: OpenAI GPT).
"""

from __future__ import annotations

import transformers

from ...conversion import KeyMap, StateDictAdapter, VariantWeights
from ...conversion.key_map import head_renames
from ...conversion.variant_weights import require_values
from .configuration_gpt import GPTConfig

_THEIR_LAYER, _OUR_LAYER = "h.{i}", "encoder.layers.{i}"

_LAYER_NORMS = head_renames(
    [
        (f"{_THEIR_LAYER}.ln_1", f"{_OUR_LAYER}.attention_norm"),
        (f"{_THEIR_LAYER}.ln_2", f"{_OUR_LAYER}.ffn_norm"),
    ]
)
_CONV1D = [  # (their module, our module): Conv1D weights are transposed, biases renamed
    (f"{_THEIR_LAYER}.attn.c_attn", f"{_OUR_LAYER}.attention.qkv"),
    (f"{_THEIR_LAYER}.attn.c_proj", f"{_OUR_LAYER}.attention.out"),
    (f"{_THEIR_LAYER}.mlp.c_fc", f"{_OUR_LAYER}.ffn.up"),
    (f"{_THEIR_LAYER}.mlp.c_proj", f"{_OUR_LAYER}.ffn.down"),
]
_LAYERS = _LAYER_NORMS + [(f"{theirs}.bias", f"{ours}.bias") for theirs, ours in _CONV1D]
_TRANSPOSED = [(f"{theirs}.weight", f"{ours}.weight") for theirs, ours in _CONV1D]

_GPT2_EMBEDDINGS = [
    ("wte.weight", "embeddings.word_embeddings.weight"),
    ("wpe.weight", "embeddings.position_embeddings.weight"),
]
_OPENAI_EMBEDDINGS = [
    ("tokens_embed.weight", "embeddings.word_embeddings.weight"),
    ("positions_embed.weight", "embeddings.position_embeddings.weight"),
]
_FINAL_NORM = head_renames([("ln_f", "encoder.final_layer_norm")])

_HEADS = {
    "Model": [],
    "LMHeadModel": [("lm_head.weight", "lm_head.weight")],
    "ForSequenceClassification": [("score.weight", "classifier.out_proj.weight")],
    "ForTokenClassification": head_renames([("classifier", "classifier")]),
    "ForQuestionAnswering": head_renames([("qa_outputs", "qa_outputs")]),
    "DoubleHeadsModel": [("lm_head.weight", "lm_head.weight")]
    + head_renames([("multiple_choice_head.summary", "multiple_choice_head.out_proj")]),
}
# Causal-mask buffers that checkpoints saved by older transformers versions carry: not weights.
_IGNORED = [r"(transformer\.)?h\.\d+\.attn\.(masked_)?bias"]


def _key_map(embeddings: list[tuple[str, str]]) -> KeyMap:
    return KeyMap(
        backbone=embeddings + _LAYERS + _FINAL_NORM,
        backbone_fused=[],
        backbone_transposed=_TRANSPOSED,
        heads=_HEADS,
        ignored={head: _IGNORED for head in _HEADS},
        their_prefix="transformer",
        our_prefix="transformer",
    )


# GPT-2's names, and OpenAI GPT's embedding names too so one load-time mapping (from_pretrained)
# reads both families' checkpoints; GPT-2's come first, so to_transformers writes them.
KEY_MAP = _key_map(_GPT2_EMBEDDINGS + _OPENAI_EMBEDDINGS)
OPENAI_KEY_MAP = _key_map(_OPENAI_EMBEDDINGS)

# The heads transformers' OpenAI GPT has (no token classification or QA).
_OPENAI_HEADS = ("Model", "LMHeadModel", "ForSequenceClassification", "DoubleHeadsModel")


# OpenAI GPT's ``afn`` names -> ours: its "gelu" is the tanh approximation (the original GPT-1's
# activation), our "gelu_new"; the exact GELU has no name there.
_OPENAI_ACTIVATIONS = {"gelu": "gelu_new", "relu": "relu", "silu": "silu", "swish": "silu"}


def _check_expressible(config: GPTConfig) -> None:
    require_values(
        config,
        "GPT-2 / OpenAI GPT",
        {
            "norm_type": "layer_norm",
            "use_bias": True,
            "gated_ffn": False,
            "head_dim": config.derived_head_dim,
            "attention_scale": None,
            "layer_sharing": "none",
            "ffn_dropout_prob": 0.0,
            "add_cross_attention": False,
        },
    )


def _label_fields(source: dict) -> dict:
    """The task fields every transformers config carries (labels, problem type)."""
    return {k: source[k] for k in ("id2label", "label2id", "problem_type") if source.get(k) is not None}


def config_to_theirs(config: GPTConfig) -> transformers.GPT2Config | transformers.OpenAIGPTConfig:
    """Our config -> GPT2Config (pre-LN) or OpenAIGPTConfig (post-LN); ValueError where neither fits."""
    _check_expressible(config)
    common = dict(
        vocab_size=config.vocab_size,
        n_positions=config.max_position_embeddings,
        n_embd=config.hidden_size,
        n_layer=config.num_hidden_layers,
        n_head=config.num_attention_heads,
        resid_pdrop=config.hidden_dropout_prob,
        embd_pdrop=config.hidden_dropout_prob,
        attn_pdrop=config.attention_probs_dropout_prob,
        layer_norm_epsilon=config.layer_norm_eps,
        initializer_range=config.initializer_range,
        pad_token_id=config.pad_token_id,
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        tie_word_embeddings=config.tie_word_embeddings,
        **_label_fields(config.to_dict()),
    )
    if config.pre_layer_norm:
        theirs = transformers.GPT2Config(
            n_inner=config.intermediate_size,
            activation_function=config.hidden_act,
            use_cache=config.use_cache,
            **common,
        )
    else:
        if config.intermediate_size != 4 * config.hidden_size:
            raise ValueError(
                f"transformers' OpenAI GPT has a 4 x hidden_size FFN; intermediate_size={config.intermediate_size} "
                f"!= {4 * config.hidden_size}"
            )
        afn = {ours: theirs for theirs, ours in _OPENAI_ACTIVATIONS.items() if theirs != "swish"}.get(config.hidden_act)
        if afn is None:
            raise ValueError(
                f"transformers' OpenAI GPT has no activation {config.hidden_act!r} (its afn covers "
                f"{sorted(set(_OPENAI_ACTIVATIONS.values()))} in our names; its 'gelu' is our 'gelu_new')"
            )
        theirs = transformers.OpenAIGPTConfig(afn=afn, **common)
    if config.classifier_dropout is not None:
        theirs.classifier_dropout = config.classifier_dropout  # read by GPT2ForTokenClassification
    return theirs


def config_dict_to_ours(config_dict: dict) -> dict:
    """A GPT-2 / OpenAI GPT config.json's contents -> our config's arguments."""
    is_openai = config_dict.get("model_type") == "openai-gpt" or "afn" in config_dict
    hidden = config_dict.get("n_embd", 768)
    fields = dict(
        vocab_size=config_dict.get("vocab_size", 40478 if is_openai else 50257),
        max_position_embeddings=config_dict.get("n_positions", 512 if is_openai else 1024),
        hidden_size=hidden,
        num_hidden_layers=config_dict.get("n_layer", 12),
        num_attention_heads=config_dict.get("n_head", 12),
        hidden_dropout_prob=config_dict.get("resid_pdrop", 0.1),
        attention_probs_dropout_prob=config_dict.get("attn_pdrop", 0.1),
        layer_norm_eps=config_dict.get("layer_norm_epsilon", 1e-5),
        initializer_range=config_dict.get("initializer_range", 0.02),
        pad_token_id=config_dict.get("pad_token_id"),
        bos_token_id=config_dict.get("bos_token_id", None if is_openai else 50256),
        eos_token_id=config_dict.get("eos_token_id", None if is_openai else 50256),
        tie_word_embeddings=config_dict.get("tie_word_embeddings", True),
        classifier_dropout=config_dict.get("classifier_dropout"),
        **_label_fields(config_dict),
    )
    if is_openai:
        fields.update(
            pre_layer_norm=False,
            scale_residual_init=False,
            hidden_act=_OPENAI_ACTIVATIONS.get(config_dict.get("afn", "gelu"), config_dict.get("afn")),
            intermediate_size=4 * hidden,
        )
    else:
        fields.update(
            pre_layer_norm=True,
            hidden_act=config_dict.get("activation_function", "gelu_new"),
            intermediate_size=config_dict.get("n_inner") or 4 * hidden,
            use_cache=config_dict.get("use_cache", True),
        )
        for name, supported in (
            ("scale_attn_weights", True),
            ("scale_attn_by_inverse_layer_idx", False),
            ("reorder_and_upcast_attn", False),
            ("add_cross_attention", False),
        ):
            if config_dict.get(name, supported) != supported:
                raise ValueError(f"GPT-2 with {name}={config_dict[name]!r} is not supported (needs {supported!r})")
    return fields


class GPTWeights(VariantWeights):
    """VariantWeights whose two transformers families differ in config (GPT2Config / OpenAIGPTConfig)
    and in the embeddings' names (the family follows the config: post-LN is OpenAI GPT)."""

    def adapter_for_config(self, head: str, config) -> StateDictAdapter:
        is_gpt1 = isinstance(config, transformers.OpenAIGPTConfig) or (
            isinstance(config, GPTConfig) and not config.pre_layer_norm
        )
        return (OPENAI_KEY_MAP if is_gpt1 else KEY_MAP).adapter(head)

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        if config_dict.get("model_type") == self.model_type:
            return {k: v for k, v in config_dict.items() if k not in ("model_type", "architectures")}
        return config_dict_to_ours(config_dict)

    def config_to_family(self, config, config_class: type):
        theirs = self.config_to_theirs(config)
        if type(theirs) is not config_class:
            generation = (
                "GPT-2 (pre_layer_norm=True)"
                if config_class is transformers.GPT2Config
                else "GPT-1 (pre_layer_norm=False)"
            )
            raise ValueError(
                f"{config_class.__name__} describes {generation}; this config converts to {type(theirs).__name__}"
            )
        return theirs


WEIGHTS = GPTWeights(
    config_class=GPTConfig,
    key_map=KEY_MAP,
    transformers_classes={
        head: (f"GPT2{head}", f"OpenAIGPT{head}") if head in _OPENAI_HEADS else f"GPT2{head}" for head in _HEADS
    },
    source_model_types=("gpt2", "openai-gpt"),
    config_to_theirs=config_to_theirs,
)


def config_to_ours(config: transformers.GPT2Config | transformers.OpenAIGPTConfig, **overrides) -> GPTConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
