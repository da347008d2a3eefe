"""BERT <-> transformers' BERT: config translation and the explicit weight key map."""

from __future__ import annotations

import transformers

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from . import modeling_bert as ours
from .configuration_bert import BertConfig


def encoder_renames(prefix: str) -> list[tuple[str, str]]:
    """transformers' BERT encoder names -> ours, for a backbone stored under ``prefix``."""
    layer, our_layer = f"{prefix}.encoder.layer.{{i}}", f"{prefix}.encoder.layers.{{i}}"
    renames = [
        (f"{prefix}.embeddings.word_embeddings.weight", f"{prefix}.embeddings.word_embeddings.weight"),
        (f"{prefix}.embeddings.position_embeddings.weight", f"{prefix}.embeddings.position_embeddings.weight"),
        (f"{prefix}.embeddings.token_type_embeddings.weight", f"{prefix}.embeddings.token_type_embeddings.weight"),
    ]
    for param in ("weight", "bias"):
        renames += [
            (f"{prefix}.embeddings.LayerNorm.{param}", f"{prefix}.embeddings.layer_norm.{param}"),
            (f"{layer}.attention.output.dense.{param}", f"{our_layer}.attention.out.{param}"),
            (f"{layer}.attention.output.LayerNorm.{param}", f"{our_layer}.attention_norm.{param}"),
            (f"{layer}.intermediate.dense.{param}", f"{our_layer}.ffn.up.{param}"),
            (f"{layer}.output.dense.{param}", f"{our_layer}.ffn.down.{param}"),
            (f"{layer}.output.LayerNorm.{param}", f"{our_layer}.ffn_norm.{param}"),
            (f"{prefix}.pooler.dense.{param}", f"{prefix}.pooler.dense.{param}"),
        ]
    return renames


def fused_qkv(prefix: str) -> list[tuple[str, list[str]]]:
    layer = f"{prefix}.encoder.layer.{{i}}.attention.self"
    return [
        (f"{prefix}.encoder.layers.{{i}}.attention.qkv.{param}", [f"{layer}.{name}.{param}" for name in ("query", "key", "value")])
        for param in ("weight", "bias")
    ]


def head_renames(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(f"{theirs}.{p}", f"{ours_}.{p}") for theirs, ours_ in pairs for p in ("weight", "bias")]


MLM_HEAD = [("cls.predictions.transform.dense", "mlm_head.transform.dense"), ("cls.predictions.transform.LayerNorm", "mlm_head.transform.layer_norm")]
MLM_DECODER = [("cls.predictions.decoder.weight", "mlm_head.decoder.weight"), ("cls.predictions.bias", "mlm_head.decoder.bias")]
# transformers keeps the decoder bias under two names (tied); ours has one.
MLM_IGNORED = [r"cls\.predictions\.decoder\.bias"]

HEADS: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "Model": ([], []),
    "ForPreTraining": (head_renames(MLM_HEAD + [("cls.seq_relationship", "nsp_head")]) + MLM_DECODER, MLM_IGNORED),
    "ForMaskedLM": (head_renames(MLM_HEAD) + MLM_DECODER, MLM_IGNORED),
    "ForNextSentencePrediction": (head_renames([("cls.seq_relationship", "nsp_head")]), []),
    "ForSequenceClassification": (head_renames([("classifier", "classifier.out_proj")]), []),
    "ForTokenClassification": (head_renames([("classifier", "classifier")]), []),
    "ForQuestionAnswering": (head_renames([("qa_outputs", "qa_outputs")]), []),
    "ForMultipleChoice": (head_renames([("classifier", "classifier.out_proj")]), []),
}


def bert_adapter(head: str) -> StateDictAdapter:
    # The bare BertModel's keys have no "bert." prefix in transformers' state dict, nor in ours.
    prefix = "bert" if head != "Model" else ""
    renames, ignored = HEADS[head]
    encoder = [(t.lstrip("."), o.lstrip(".")) for t, o in encoder_renames(prefix)]
    fused = [(o.lstrip("."), [t.lstrip(".") for t in ts]) for o, ts in fused_qkv(prefix)]
    return StateDictAdapter(renames=encoder + renames, fused=fused, ignored=ignored)


def config_to_ours(config: transformers.BertConfig) -> BertConfig:
    fields = shared_config_fields(config, BertConfig)
    fields["position_embedding_type"] = "learned"
    return BertConfig(**fields)


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


for _head in HEADS:
    register_conversion(
        ConversionPair(
            ours=getattr(ours, f"Bert{_head}"),
            theirs=getattr(transformers, f"Bert{_head}"),
            adapter=bert_adapter(_head),
            config_to_ours=config_to_ours,
            config_to_theirs=config_to_theirs,
        )
    )
