"""ELECTRA's weights: the one explicit key map between transformers' ELECTRA and ours, and the
config translation. Read by ``from_transformers``, ``to_transformers`` and ``from_pretrained``
alike (see ``hf_variants.conversion``); it imports no modeling code.

The encoder's names are BERT's (``conversion/bert_layout.py``) under the ``electra`` prefix, plus
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

Our joint ``ElectraForPreTraining`` has no transformers counterpart; its two halves do:
``to_transformers(model.generator_as_masked_lm())``, and
``ElectraForReplacedTokenDetection.from_pretrained(<joint checkpoint>)`` for the discriminator.
A transformers checkpoint (e.g. google/electra-small-discriminator) loaded into the joint model
fills the discriminator and leaves the generator newly initialised, as reported by from_pretrained.
"""

from __future__ import annotations

from dataclasses import dataclass

import transformers

from ...conversion import KeyMap, VariantWeights, shared_config_fields
from ...conversion.bert_layout import BACKBONE as BERT_BACKBONE
from ...conversion.bert_layout import BACKBONE_FUSED, check_bert_expressible
from ...conversion.key_map import head_renames
from .configuration_electra import ElectraConfig

BACKBONE = BERT_BACKBONE + head_renames([("embeddings_project", "embeddings.projection")])

HEADS = {
    "Model": [],
    "ForReplacedTokenDetection": head_renames(
        [
            ("discriminator_predictions.dense", "discriminator_predictions.dense"),
            ("discriminator_predictions.dense_prediction", "discriminator_predictions.dense_prediction"),
        ]
    ),
    "ForMaskedLM": head_renames(
        [
            ("generator_predictions.dense", "mlm_head.transform.dense"),
            ("generator_predictions.LayerNorm", "mlm_head.transform.layer_norm"),
            ("generator_lm_head", "mlm_head.decoder"),
        ]
    ),
    "ForSequenceClassification": head_renames(
        [("classifier.dense", "classifier.dense"), ("classifier.out_proj", "classifier.out_proj")]
    ),
    "ForTokenClassification": head_renames([("classifier", "classifier")]),
    "ForQuestionAnswering": head_renames([("qa_outputs", "qa_outputs")]),
    "ForMultipleChoice": head_renames(
        [("sequence_summary.summary", "classifier.dense"), ("classifier", "classifier.out_proj")]
    ),
}

KEY_MAP = KeyMap(
    backbone=BACKBONE,
    backbone_fused=BACKBONE_FUSED,
    heads=HEADS,
    their_prefix="electra",
    our_prefix="electra",
)

# transformers' config fields our heads fix to transformers' defaults (the multiple-choice head
# is its sequence summary as ElectraConfig sets it up): (field, required value, value if absent).
FIXED_FIELDS = (
    ("summary_type", "first", "first"),
    ("summary_use_proj", True, True),
    ("summary_activation", "gelu", None),
    ("summary_proj_to_labels", False, False),
    ("summary_first_dropout", 0.0, 0.0),
    # transformers' generator head always applies GELU; ours (like the paper's code) hidden_act.
    ("hidden_act", "gelu", "gelu"),
)


def check_expressible(config_dict: dict, direction: str) -> None:
    for name, required, absent in FIXED_FIELDS:
        value = config_dict.get(name, absent)
        if value is not None and value != required:
            raise ValueError(f"{direction}: no equivalent of ELECTRA's {name}={value!r} (needs {required!r})")


@dataclass(frozen=True)
class ElectraWeights(VariantWeights):
    def config_dict_to_ours(self, config_dict: dict) -> dict:
        check_expressible(config_dict, "transformers' ELECTRA -> hf-variants")
        return super().config_dict_to_ours(config_dict)


def config_to_theirs(config: ElectraConfig) -> transformers.ElectraConfig:
    check_bert_expressible(config)  # raises for what BERT-style blocks cannot express
    check_expressible({"hidden_act": config.hidden_act}, "hf-variants -> transformers' ELECTRA")
    fields = shared_config_fields(config, transformers.ElectraConfig)
    fields.pop("architectures", None)
    fields["embedding_size"] = config.embedding_size or config.hidden_size
    return transformers.ElectraConfig(**fields)


# Our class suffix -> transformers' class (only the RTD model's name differs; see modeling_electra).
TRANSFORMERS_CLASSES = {head: f"Electra{head}" for head in HEADS} | {
    "ForReplacedTokenDetection": "ElectraForPreTraining"
}

WEIGHTS = ElectraWeights(
    config_class=ElectraConfig,
    key_map=KEY_MAP,
    transformers_classes=TRANSFORMERS_CLASSES,
    source_model_types=("electra",),
    config_to_theirs=config_to_theirs,
)
