"""RoBERTa <-> transformers' ``Roberta*`` and ``XLMRoberta*`` classes: config translation and the
explicit weight key map.

The encoder is BERT's and transformers names it exactly as BERT's, under ``roberta.`` instead of
``bert.`` (``embeddings.*``, ``encoder.layer.{i}.*``, ``pooler.dense``), so it uses BERT's encoder
map with that prefix (``models/bert/conversion.py``). The heads differ and are listed here:

==============================  ===========================================  ==================================
transformers                    key                                          ours
==============================  ===========================================  ==================================
RobertaForMaskedLM              ``lm_head.dense``                            ``mlm_head.transform.dense``
                                ``lm_head.layer_norm``                       ``mlm_head.transform.layer_norm``
                                ``lm_head.decoder.weight`` (tied)            ``mlm_head.decoder.weight`` (tied)
                                ``lm_head.bias`` (= ``lm_head.decoder.bias``)  ``mlm_head.decoder.bias``
RobertaForSequenceClassification ``classifier.dense`` / ``classifier.out_proj``  the same names
RobertaForTokenClassification   ``classifier``                               ``classifier``
RobertaForQuestionAnswering     ``qa_outputs``                               ``qa_outputs``
RobertaForMultipleChoice        ``roberta.pooler.dense``, ``classifier``     ``roberta.pooler.dense``, ``classifier.out_proj``
==============================  ===========================================  ==================================

``XLMRoberta*`` classes have the same keys. transformers' RoBERTa LM head applies GELU whatever
``hidden_act`` says (fairseq's uses the model's activation, as ours does): the two agree for every
released checkpoint (``hidden_act="gelu"``). ``RobertaForPreTraining`` (MLM) converts to and from
``RobertaForMaskedLM``, which is what transformers' ``AutoModelForPreTraining`` builds for RoBERTa.
"""

from __future__ import annotations

import transformers

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from ..bert import conversion as bert_conversion
from . import modeling_roberta as ours
from .configuration_roberta import RobertaConfig

PREFIX = "roberta"

MLM_HEAD = bert_conversion.head_renames(
    [("lm_head.dense", "mlm_head.transform.dense"), ("lm_head.layer_norm", "mlm_head.transform.layer_norm")]
) + [("lm_head.decoder.weight", "mlm_head.decoder.weight"), ("lm_head.bias", "mlm_head.decoder.bias")]
# transformers ties lm_head.decoder.bias to lm_head.bias (two names, one tensor); ours has one name.
MLM_IGNORED = [r"lm_head\.decoder\.bias"]

HEADS: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "Model": ([], []),
    "ForMaskedLM": (MLM_HEAD, MLM_IGNORED),
    "ForPreTraining": (MLM_HEAD, MLM_IGNORED),
    "ForSequenceClassification": (
        bert_conversion.head_renames([("classifier.dense", "classifier.dense"), ("classifier.out_proj", "classifier.out_proj")]),
        [],
    ),
    "ForTokenClassification": (bert_conversion.head_renames([("classifier", "classifier")]), []),
    "ForQuestionAnswering": (bert_conversion.head_renames([("qa_outputs", "qa_outputs")]), []),
    "ForMultipleChoice": (bert_conversion.head_renames([("classifier", "classifier.out_proj")]), []),
}

# Our head -> the transformers head it converts with (the suffix after "Roberta" / "XLMRoberta").
THEIR_HEAD = {head: head for head in HEADS} | {"ForPreTraining": "ForMaskedLM"}


def roberta_adapter(head: str) -> StateDictAdapter:
    """The key map of one head. The bare model's keys carry no ``roberta.`` prefix on either side."""
    prefix = PREFIX if head != "Model" else ""
    renames, ignored = HEADS[head]
    encoder = [(t.lstrip("."), o.lstrip(".")) for t, o in bert_conversion.encoder_renames(prefix)]
    fused = [(o.lstrip("."), [t.lstrip(".") for t in ts]) for o, ts in bert_conversion.fused_qkv(prefix)]
    return StateDictAdapter(renames=encoder + renames, fused=fused, ignored=ignored)


def config_to_ours(config: transformers.RobertaConfig | transformers.XLMRobertaConfig) -> RobertaConfig:
    fields = shared_config_fields(config, RobertaConfig)
    fields["position_embedding_type"] = "learned"  # transformers' "absolute"
    return RobertaConfig(**fields)


def config_to_theirs(config: RobertaConfig, config_class: type = transformers.RobertaConfig) -> transformers.PreTrainedConfig:
    """Our config -> ``config_class`` (transformers' RobertaConfig or XLMRobertaConfig), refusing
    what transformers' RoBERTa cannot express."""
    required = {
        "pre_layer_norm": False,
        "layer_sharing": "none",
        "norm_type": "layer_norm",
        "use_bias": True,
        "gated_ffn": False,
        "head_dim": None,
        "attention_scale": None,
        "summary_type": "first",
    }
    for name, value in required.items():
        if getattr(config, name) != value:
            raise ValueError(f"transformers' RoBERTa has no equivalent of {name}={getattr(config, name)!r} (needs {value!r})")
    if config.embedding_size not in (None, config.hidden_size):
        raise ValueError(f"transformers' RoBERTa has no factorized embeddings (embedding_size={config.embedding_size})")
    if config.type_vocab_size < 1:
        raise ValueError("transformers' RoBERTa always has a segment table: type_vocab_size must be >= 1")
    fields = shared_config_fields(config, config_class)
    fields.pop("position_embedding_type", None)
    return config_class(**fields)


def config_to_xlm_roberta(config: RobertaConfig) -> transformers.XLMRobertaConfig:
    return config_to_theirs(config, transformers.XLMRobertaConfig)


# Roberta* first: to_transformers(model) without a target class gives transformers' RoBERTa.
for _family, _to_theirs in (("Roberta", config_to_theirs), ("XLMRoberta", config_to_xlm_roberta)):
    for _head in HEADS:
        register_conversion(
            ConversionPair(
                ours=getattr(ours, f"Roberta{_head}"),
                theirs=getattr(transformers, f"{_family}{THEIR_HEAD[_head]}"),
                adapter=roberta_adapter(_head),
                config_to_ours=config_to_ours,
                config_to_theirs=_to_theirs,
            )
        )
