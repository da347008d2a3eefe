"""ELECTRA <-> transformers' ELECTRA: config translation and the explicit weight key map.

The encoder's names are BERT's (``models/bert/conversion.py``) under the ``electra`` prefix, plus
ELECTRA's own: transformers keeps the E -> H projection outside the embeddings
(``electra.embeddings_project``), ours is ``electra.embeddings.projection``. Heads:

=========================================  ====================================================
transformers                               ours
=========================================  ====================================================
ElectraForPreTraining (discriminator)      ElectraForReplacedTokenDetection (same head names)
ElectraForMaskedLM: generator_predictions  ElectraForMaskedLM: mlm_head.transform
  .dense / .LayerNorm, generator_lm_head     .dense / .layer_norm, mlm_head.decoder
ElectraForMultipleChoice:                  ElectraForMultipleChoice:
  sequence_summary.summary, classifier       classifier.dense, classifier.out_proj
=========================================  ====================================================

Our joint :class:`ElectraForPreTraining` has no transformers counterpart; its two halves do:
``to_transformers(model.generator_as_masked_lm())`` and the discriminator loaded with
``ElectraForReplacedTokenDetection.from_pretrained(<joint checkpoint>)``.
"""

from __future__ import annotations

import transformers

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from ..bert import conversion as bert_conversion
from . import modeling_electra as ours
from .configuration_electra import ElectraConfig


def encoder_renames(prefix: str) -> list[tuple[str, str]]:
    """transformers' ELECTRA encoder names -> ours, for a backbone stored under ``prefix``."""
    projection = [
        (f"{prefix}.embeddings_project.{p}", f"{prefix}.embeddings.projection.{p}") for p in ("weight", "bias")
    ]
    return bert_conversion.encoder_renames(prefix) + projection


HEAD_RENAMES = bert_conversion.head_renames
HEADS: dict[str, list[tuple[str, str]]] = {
    "Model": [],
    "ForReplacedTokenDetection": HEAD_RENAMES(
        [("discriminator_predictions.dense", "discriminator_predictions.dense"),
         ("discriminator_predictions.dense_prediction", "discriminator_predictions.dense_prediction")]
    ),
    "ForMaskedLM": HEAD_RENAMES(
        [("generator_predictions.dense", "mlm_head.transform.dense"),
         ("generator_predictions.LayerNorm", "mlm_head.transform.layer_norm"),
         ("generator_lm_head", "mlm_head.decoder")]
    ),
    "ForSequenceClassification": HEAD_RENAMES([("classifier.dense", "classifier.dense"), ("classifier.out_proj", "classifier.out_proj")]),
    "ForTokenClassification": HEAD_RENAMES([("classifier", "classifier")]),
    "ForQuestionAnswering": HEAD_RENAMES([("qa_outputs", "qa_outputs")]),
    "ForMultipleChoice": HEAD_RENAMES([("sequence_summary.summary", "classifier.dense"), ("classifier", "classifier.out_proj")]),
}
# Our class name -> transformers' (only the RTD model differs, see modeling_electra's docstring).
THEIR_CLASS = {head: f"Electra{head}" for head in HEADS} | {"ForReplacedTokenDetection": "ElectraForPreTraining"}


def electra_adapter(head: str) -> StateDictAdapter:
    # The bare ElectraModel's keys have no "electra." prefix in transformers' state dict, nor in ours.
    prefix = "electra" if head != "Model" else ""
    encoder = [(t.lstrip("."), o.lstrip(".")) for t, o in encoder_renames(prefix)]
    fused = [(o.lstrip("."), [t.lstrip(".") for t in ts]) for o, ts in bert_conversion.fused_qkv(prefix)]
    return StateDictAdapter(renames=encoder + HEADS[head], fused=fused)


def config_to_ours(config: transformers.ElectraConfig) -> ElectraConfig:
    # Our multiple-choice head is transformers' sequence summary as ElectraConfig sets it up by default.
    summary = {"summary_type": ("first", config.summary_type), "summary_use_proj": (True, config.summary_use_proj),
               "summary_activation": ("gelu", config.summary_activation)}
    for name, (required, value) in summary.items():
        if value != required:
            raise ValueError(f"hf-variants' ELECTRA has no equivalent of transformers' {name}={value!r} (needs {required!r})")
    if getattr(config, "summary_proj_to_labels", False) or getattr(config, "summary_first_dropout", 0.0):
        raise ValueError("hf-variants' ELECTRA has no equivalent of summary_proj_to_labels / summary_first_dropout")
    fields = shared_config_fields(config, ElectraConfig)
    fields.pop("architectures", None)
    fields["position_embedding_type"] = "learned"
    return ElectraConfig(**fields)


def config_to_theirs(config: ElectraConfig) -> transformers.ElectraConfig:
    bert_conversion.config_to_theirs(config)  # raises for what BERT-style blocks cannot express
    fields = shared_config_fields(config, transformers.ElectraConfig)
    fields.pop("architectures", None)
    fields["embedding_size"] = config.embedding_size or config.hidden_size
    return transformers.ElectraConfig(**fields)


def generator_config_check(convert):
    """transformers' generator head always uses GELU; ours uses ``hidden_act`` like the paper's
    code. They agree only for GELU (every released ELECTRA)."""

    def checked(config):
        if config.hidden_act != "gelu":
            raise ValueError(
                f"ElectraForMaskedLM: transformers' generator head always applies gelu, this config has "
                f"hidden_act={config.hidden_act!r}; the outputs would differ"
            )
        return convert(config)

    return checked


for _head in HEADS:
    _masked_lm = _head == "ForMaskedLM"
    register_conversion(
        ConversionPair(
            ours=getattr(ours, f"Electra{_head}"),
            theirs=getattr(transformers, THEIR_CLASS[_head]),
            adapter=electra_adapter(_head),
            config_to_ours=generator_config_check(config_to_ours) if _masked_lm else config_to_ours,
            config_to_theirs=generator_config_check(config_to_theirs) if _masked_lm else config_to_theirs,
        )
    )
