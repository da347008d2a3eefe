"""Transformer-XL's weights: the one explicit key map from the OLD transformers TransfoXL format
(``TransfoXLLMHeadModel`` of transformers < 5, removed in v5) to ours, and its config translation.
Read by ``convert_old_checkpoint.py``.

Two things are not renames:
- attention: the old fused ``qkv_net`` (3·heads·D, H), ``r_net`` (heads·D, H) and ``o_net``
  (H, heads·D) Linear weights become our per-head (H, heads, D) tensors ``q k v r o``
  (``per_head_attention``, a reshape; the rest is renamed by ``old_key_map``);
- shared biases: a model saved with ``untie_r=False`` keeps one ``r_w_bias``/``r_r_bias`` at the
  root; every layer of ours gets a copy.
Tied duplicates (the softmax's cluster tables and tail projections, when saved under both names)
are dropped; the sinusoid frequencies (``pos_emb.inv_freq``) are recomputed, not read.
"""

from __future__ import annotations

import torch

from ...conversion.key_map import StateDictAdapter, head_renames
from .configuration_transfo_xl import TransfoXLConfig

_OLD_LAYER, _OUR_LAYER = "transformer.layers.{i}", "transformer.layers.{i}"
OLD_MODEL_TYPE = "transfo-xl"


def per_head_attention(state: dict[str, torch.Tensor], heads: int, head_dim: int) -> dict[str, torch.Tensor]:
    """The old fused / flat attention projections of every layer -> per-head (H, heads, D) tensors
    under ``...dec_attn.{q,k,v,r,o}`` (renamed to ours by ``old_key_map``). Other keys pass."""
    converted = {}
    for key, tensor in state.items():
        prefix, _, name = key.rpartition(".dec_attn.")
        if name == "qkv_net.weight":  # (3 * heads * D, H): q, k, v stacked on the output axis
            for part, block in zip("qkv", tensor.chunk(3, dim=0)):
                converted[f"{prefix}.dec_attn.{part}"] = block.t().reshape(-1, heads, head_dim).contiguous()
        elif name == "r_net.weight":  # (heads * D, H)
            converted[f"{prefix}.dec_attn.r"] = tensor.t().reshape(-1, heads, head_dim).contiguous()
        elif name == "o_net.weight":  # (H, heads * D)
            converted[f"{prefix}.dec_attn.o"] = tensor.reshape(tensor.shape[0], heads, head_dim).contiguous()
        else:
            converted[key] = tensor
    return converted


def shared_biases_to_layers(state: dict[str, torch.Tensor], layers: int) -> dict[str, torch.Tensor]:
    """``untie_r=False`` checkpoints: the root ``transformer.r_w_bias`` / ``r_r_bias`` copied into every layer."""
    state = dict(state)
    for name in ("r_w_bias", "r_r_bias"):
        shared = state.pop(f"transformer.{name}", None)
        if shared is not None:
            for layer in range(layers):
                state[f"transformer.layers.{layer}.dec_attn.{name}"] = shared.clone()
    return state


def tied_inputs_from_softmax(state: dict[str, torch.Tensor], config: TransfoXLConfig) -> dict[str, torch.Tensor]:
    """A checkpoint that kept a tied tensor under its softmax name only (``crit.out_layers.k.weight``,
    ``crit.out_projs.k``): the tensor moved to its input name, which ``old_key_map`` reads."""
    state = dict(state)
    pairs = []
    if config.tie_word_embeddings:
        tables = range(len(config.cutoffs or []) + 1) if config.div_val > 1 else [0]
        pairs += [(f"crit.out_layers.{k}.weight", f"transformer.word_emb.emb_layers.{k}.weight") for k in tables]
    if config.tie_projections and config.adaptive_input:
        pairs += [
            (f"crit.out_projs.{k}", f"transformer.word_emb.emb_projs.{k if config.div_val > 1 else 0}")
            for k in range(1, len(config.cutoffs or []) + 1)
        ]
    for softmax_name, input_name in pairs:
        if input_name not in state and softmax_name in state:
            state[input_name] = state.pop(softmax_name)
    return state


def old_key_map(config: TransfoXLConfig) -> StateDictAdapter:
    """Old TransfoXLLMHeadModel names (after ``per_head_attention``) -> ours, for ``config``'s
    embedding and softmax kinds (one table or adaptive clusters; full or adaptive softmax)."""
    renames = [
        (f"{_OLD_LAYER}.dec_attn.{name}", f"{_OUR_LAYER}.attention.{name}")
        for name in ("q", "k", "v", "r", "o", "r_w_bias", "r_r_bias")
    ]
    renames += head_renames(
        [
            (f"{_OLD_LAYER}.dec_attn.layer_norm", f"{_OUR_LAYER}.attention_norm"),
            (f"{_OLD_LAYER}.pos_ff.CoreNet.0", f"{_OUR_LAYER}.ffn.up"),
            (f"{_OLD_LAYER}.pos_ff.CoreNet.3", f"{_OUR_LAYER}.ffn.down"),
            (f"{_OLD_LAYER}.pos_ff.layer_norm", f"{_OUR_LAYER}.ffn_norm"),
        ]
    )
    if config.adaptive_input:
        renames += [
            ("transformer.word_emb.emb_layers.{i}.weight", "transformer.word_embeddings.tables.{i}.weight"),
            ("transformer.word_emb.emb_projs.{i}", "transformer.word_embeddings.projections.{i}"),
        ]
    else:
        renames += [("transformer.word_emb.emb_layers.0.weight", "transformer.word_embeddings.weight")]
    if config.adaptive_softmax:
        renames += head_renames([("crit.out_layers.{i}", "lm_head.cluster_layers.{i}")])
        renames += [
            ("crit.out_projs.{i}", "lm_head.projections.{i}"),
            ("crit.cluster_weight", "lm_head.cluster_weight"),
            ("crit.cluster_bias", "lm_head.cluster_bias"),
        ]
    else:
        renames += head_renames([("crit.out_layers.0", "lm_head")])
    ignored = [r"transformer\.pos_emb\.inv_freq"]
    if config.tie_word_embeddings:  # the softmax's tables are the embedding's: read once
        ignored.append(r"crit\.out_layers\.\d+\.weight")
    if config.tie_projections and config.adaptive_input:
        ignored.append(r"crit\.out_projs\.[1-9]\d*")
    return StateDictAdapter(renames=renames, ignored=ignored)


# Old TransfoXLConfig field -> ours, where the names differ (the rest are read by the same name).
_RENAMED = {
    "d_model": "hidden_size",
    "n_layer": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "d_head": "head_dim",
    "d_inner": "intermediate_size",
    "dropout": "hidden_dropout_prob",
    "dropatt": "attention_probs_dropout_prob",
    "d_embed": "embedding_size",
    "layer_norm_epsilon": "layer_norm_eps",
    "init_std": "initializer_range",
}
_COPIED = (
    "vocab_size",
    "cutoffs",
    "div_val",
    "mem_len",
    "clamp_len",
    "same_length",
    "eos_token_id",
    "tie_word_embeddings",
)


def old_config_to_ours(old: dict) -> TransfoXLConfig:
    """An old ``config.json`` (model_type ``transfo-xl``) -> our config; ValueError for what ours
    does not compute (pre-LN, another attention type, sampled softmax, partly tied projections)."""
    if old.get("model_type") != OLD_MODEL_TYPE:
        raise ValueError(
            f"expected an old transformers TransfoXL config (model_type {OLD_MODEL_TYPE!r}), "
            f"got model_type {old.get('model_type')!r}"
        )
    unsupported = {"pre_lnorm": (old.get("pre_lnorm", False), False), "attn_type": (old.get("attn_type", 0), 0)}
    for name, (value, needed) in unsupported.items():
        if value != needed:
            raise ValueError(f"this checkpoint has {name}={value!r}; only {name}={needed!r} is provided")
    if old.get("sample_softmax", -1) > 0:
        raise ValueError("sampled softmax (sample_softmax > 0) is not provided")
    fields = {ours: old[theirs] for theirs, ours in _RENAMED.items() if theirs in old}
    fields.update({name: old[name] for name in _COPIED if name in old})
    if fields.get("embedding_size") == fields.get("hidden_size", 1024):
        fields["embedding_size"] = None  # no projection: ours reads None as "the hidden size"
    clusters = len(fields.get("cutoffs", [20000, 40000, 200000]))
    tie_projs = list(old.get("tie_projs", [False] + [True] * clusters))
    if tie_projs not in ([False] + [True] * clusters, [False] * (clusters + 1)):
        raise ValueError(f"tie_projs={tie_projs}: only all tail clusters tied ([False, True, ...]) or none is provided")
    fields["tie_projections"] = any(tie_projs)
    return TransfoXLConfig(**fields)
