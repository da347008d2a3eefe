"""RoBERTa's weights: the one explicit key map between transformers' ``Roberta*`` / ``XLMRoberta*``
classes and ours, and the config translation. Read by ``from_transformers``, ``to_transformers``
and ``from_pretrained`` alike (see ``hf_variants.conversion``); it imports no modeling code.

The encoder is BERT's and transformers names it exactly as BERT's, under ``roberta.`` instead of
``bert.`` (``embeddings.*``, ``encoder.layer.{i}.*``, ``pooler.dense``), so the backbone part is
BERT's (``conversion/bert_layout.py``). The heads differ and are listed here:

================================  =============================================  ==================================
transformers                      key                                            ours
================================  =============================================  ==================================
RobertaForMaskedLM                ``lm_head.dense``                              ``mlm_head.transform.dense``
                                  ``lm_head.layer_norm``                         ``mlm_head.transform.layer_norm``
                                  ``lm_head.decoder.weight`` (tied)              ``mlm_head.decoder.weight`` (tied)
                                  ``lm_head.bias`` (= ``lm_head.decoder.bias``)  ``mlm_head.decoder.bias``
RobertaForSequenceClassification  ``classifier.dense`` / ``classifier.out_proj``  the same names
RobertaForTokenClassification     ``classifier``                                 ``classifier``
RobertaForQuestionAnswering       ``qa_outputs``                                 ``qa_outputs``
RobertaForMultipleChoice          ``roberta.pooler.dense``, ``classifier``       ``roberta.pooler.dense``, ``classifier.out_proj``
================================  =============================================  ==================================

``XLMRoberta*`` classes have the same keys: two transformers families for one variant. Our
config's ``transformers_family`` records which one a model came from (``from_transformers`` and
``from_pretrained`` set it from the source's model_type), and ``to_transformers`` builds that
family by default, so an XLM-R model goes back to ``XLMRoberta*`` (and its saved folder keeps
model_type "xlm-roberta", which picks XLM-R's tokenizer); ``to_transformers(model, cls)`` picks
either explicitly. transformers' RoBERTa LM head applies GELU whatever ``hidden_act`` says (fairseq's
uses the model's activation, as ours does): the two agree for every released checkpoint
(``hidden_act="gelu"``). ``RobertaForPreTraining`` (MLM) converts to and from ``RobertaForMaskedLM``,
which is what transformers' ``AutoModelForPreTraining`` builds for RoBERTa.
"""

from __future__ import annotations

import transformers

from ...conversion import KeyMap, VariantWeights, shared_config_fields
from ...conversion.bert_layout import BACKBONE, BACKBONE_FUSED
from ...conversion.key_map import head_renames
from ...conversion.variant_weights import require_values
from .configuration_roberta import TRANSFORMERS_FAMILIES, RobertaConfig

MLM_HEAD = head_renames(
    [("lm_head.dense", "mlm_head.transform.dense"), ("lm_head.layer_norm", "mlm_head.transform.layer_norm")]
) + [("lm_head.decoder.weight", "mlm_head.decoder.weight"), ("lm_head.bias", "mlm_head.decoder.bias")]
# transformers ties lm_head.decoder.bias to lm_head.bias (two names, one tensor); ours has one name.
MLM_IGNORED = [r"lm_head\.decoder\.bias"]

KEY_MAP = KeyMap(
    backbone=BACKBONE,
    backbone_fused=BACKBONE_FUSED,
    # ForMaskedLM before ForPreTraining: both pair with transformers' RobertaForMaskedLM, and the
    # first pair registered answers from_transformers (their ForMaskedLM -> our ForMaskedLM).
    heads={
        "Model": [],
        "ForMaskedLM": MLM_HEAD,
        "ForPreTraining": MLM_HEAD,
        "ForSequenceClassification": head_renames(
            [("classifier.dense", "classifier.dense"), ("classifier.out_proj", "classifier.out_proj")]
        ),
        "ForTokenClassification": head_renames([("classifier", "classifier")]),
        "ForQuestionAnswering": head_renames([("qa_outputs", "qa_outputs")]),
        "ForMultipleChoice": head_renames([("classifier", "classifier.out_proj")]),
    },
    ignored={"ForPreTraining": MLM_IGNORED, "ForMaskedLM": MLM_IGNORED},
    their_prefix="roberta",
    our_prefix="roberta",
)

# transformers' families with these keys, the default (to_transformers without a class) first.
FAMILIES = ("Roberta", "XLMRoberta")
# Our head -> transformers' head of the same weights (its AutoModelForPreTraining builds ForMaskedLM).
THEIR_HEAD = {head: head for head in KEY_MAP.heads} | {"ForPreTraining": "ForMaskedLM"}


def config_to_theirs(config: RobertaConfig) -> transformers.RobertaConfig | transformers.XLMRobertaConfig:
    """Our config -> the config of its ``transformers_family`` (RobertaConfig or XLMRobertaConfig),
    refusing what transformers' RoBERTa cannot express (``WEIGHTS.config_to_family`` reads it as
    the other family's config where asked)."""
    require_values(
        config,
        "RoBERTa",
        {
            "pre_layer_norm": False,
            "layer_sharing": "none",
            "norm_type": "layer_norm",
            "use_bias": True,
            "gated_ffn": False,
            "head_dim": None,
            "attention_scale": None,
            "summary_type": "first",
        },
    )
    if config.embedding_size not in (None, config.hidden_size):
        raise ValueError(f"transformers' RoBERTa has no factorized embeddings (embedding_size={config.embedding_size})")
    if config.type_vocab_size < 1:
        raise ValueError("transformers' RoBERTa always has a segment table: type_vocab_size must be >= 1")
    config_class = FAMILY_CONFIGS[config.transformers_family]
    fields = shared_config_fields(config, config_class)
    fields.pop("position_embedding_type", None)  # ours "learned" is transformers' default "absolute"
    return config_class(**fields)


# Our transformers_family -> the config class of that family.
FAMILY_CONFIGS = {"roberta": transformers.RobertaConfig, "xlm-roberta": transformers.XLMRobertaConfig}
assert tuple(FAMILY_CONFIGS) == TRANSFORMERS_FAMILIES


class RobertaWeights(VariantWeights):
    """VariantWeights recording which transformers family a translated config came from."""

    def config_dict_to_ours(self, config_dict: dict) -> dict:
        fields = super().config_dict_to_ours(config_dict)
        # The source's model_type names the family (a config.json without one: RoBERTa's era).
        if config_dict.get("model_type") in TRANSFORMERS_FAMILIES:
            fields["transformers_family"] = config_dict["model_type"]
        return fields


WEIGHTS = RobertaWeights(
    config_class=RobertaConfig,
    key_map=KEY_MAP,
    transformers_classes={head: tuple(f"{family}{THEIR_HEAD[head]}" for family in FAMILIES) for head in KEY_MAP.heads},
    source_model_types=("roberta", "xlm-roberta"),
    config_to_theirs=config_to_theirs,  # (transformers' position_embedding_type "absolute" is read as "learned")
)


def config_to_ours(config: transformers.RobertaConfig | transformers.XLMRobertaConfig, **overrides) -> RobertaConfig:
    return WEIGHTS.config_to_ours(config, **overrides)
