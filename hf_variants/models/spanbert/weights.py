"""SpanBERT's weights: BERT's key map (the encoder is BERT's, under the same ``bert`` prefix).

The released SpanBERT checkpoints are plain BERT checkpoints (transformers ``BertModel`` keys,
config.json with model_type "bert" or none), so every SpanBERT class reads them with
``from_pretrained``, converted on load by the same key map as BERT
(``conversion/bert_layout.py``); the heads they lack are reported as newly initialised.
This module imports no modeling code. It adds:

- :func:`load_bert_checkpoint` behind ``from_bert_checkpoint`` (also takes a transformers BERT
  model instance, and reports in the older {"initialised", "unused"} form);
- :func:`export_bert_encoder`: the encoder as a transformers ``BertModel``, for users without
  hf-variants;
- ``hf_variants.to_transformers`` for the SpanBERT heads with a BERT counterpart (all but the SBO
  pretraining model).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
import transformers
from transformers import PreTrainedModel

from ...conversion import VariantWeights
from ...conversion.bert_layout import KEY_MAP
from ...conversion.bert_layout import bert_config_to_theirs as config_to_theirs
from .configuration_spanbert import SpanBertConfig

# Buffers old transformers versions saved with the weights; not parameters.
BUFFER_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")

WEIGHTS = VariantWeights(
    config_class=SpanBertConfig,
    key_map=KEY_MAP,
    # SpanBertForPreTraining has the SBO where BERT's has NSP: no transformers counterpart.
    transformers_classes={
        head: f"Bert{head}"
        for head in (
            "Model",
            "ForMaskedLM",
            "ForSequenceClassification",
            "ForTokenClassification",
            "ForQuestionAnswering",
            "ForMultipleChoice",
        )
    },
    source_model_types=("bert", "hfv_bert"),
    config_to_theirs=config_to_theirs,  # the SBO fields have no counterpart and are dropped
)


def config_to_ours(config: transformers.BertConfig, **overrides) -> SpanBertConfig:
    """A transformers BertConfig (or any BERT-field config) -> SpanBertConfig with SBO defaults."""
    return WEIGHTS.config_to_ours(config, **overrides)


def load_bert_checkpoint(
    model_class: type, source: str | Path | PreTrainedModel, output_loading_info: bool = False, **config_overrides
):
    """Build ``model_class`` (a SpanBERT class) from a BERT-format checkpoint: a folder, a Hub id
    or a transformers BERT model instance. Same weights as ``model_class.from_pretrained(source)``.

    Returns the model, or (model, {"initialised": [...], "unused": [...]}) with
    ``output_loading_info``: our weights the checkpoint did not provide (new heads) and
    checkpoint weights with no place in ``model_class`` (e.g. the pooler for SpanBertForPreTraining).
    """
    if isinstance(source, PreTrainedModel):
        if source.config.model_type != "bert":
            raise ValueError(f"expected a transformers BERT model, got model_type {source.config.model_type!r}")
        model, info = model_class.from_pretrained(
            None,
            config=config_to_ours(source.config, **config_overrides),
            state_dict=source.state_dict(),
            output_loading_info=True,
        )
    else:
        folder = Path(source)
        if folder.is_dir():
            config_file = folder / "config.json"
            if not config_file.is_file():
                raise ValueError(f"{folder} has no config.json; expected a BERT-format checkpoint folder")
            model_type = json.loads(config_file.read_text()).get("model_type")
            if model_type not in (None, "bert"):
                raise ValueError(
                    f"{folder} holds a {model_type!r} checkpoint, not a BERT-format one (model_type 'bert'); "
                    "load hf-variants checkpoints with from_pretrained"
                )
        try:
            model, info = model_class.from_pretrained(str(source), output_loading_info=True, **config_overrides)
        except OSError as error:  # offline, unknown repository, bad id: all mean "no checkpoint here"
            raise ValueError(
                f"{source!r} is not a local folder and could not be fetched from the Hub: {error}"
            ) from error
    report = {
        "initialised": sorted(info["missing_keys"]),
        "unused": sorted(k for k in info["unexpected_keys"] if not k.endswith(BUFFER_SUFFIXES)),
    }
    return (model, report) if output_loading_info else model


def export_bert_encoder(model: PreTrainedModel) -> transformers.BertModel:
    """The encoder of any SpanBERT model as a transformers ``BertModel`` with identical weights
    (and no pooler when the model has none). Save it with ``save_pretrained``."""
    backbone = getattr(model, model.base_model_prefix, model)
    config = model.config
    their_state = KEY_MAP.adapter("Model").to_theirs(backbone.state_dict())
    if config.type_vocab_size == 0:
        # transformers' BERT always adds a segment embedding: one all-zero row is exactly "none".
        config = copy.deepcopy(config)
        config.type_vocab_size = 1
        their_state["embeddings.token_type_embeddings.weight"] = torch.zeros(1, config.hidden_size)
    theirs = transformers.BertModel(config_to_theirs(config), add_pooling_layer=backbone.pooler is not None)
    missing, unexpected = theirs.load_state_dict(their_state, strict=False)
    missing = [k for k in missing if not k.endswith(BUFFER_SUFFIXES)]
    if missing or unexpected:
        raise ValueError(f"BERT export mismatch: missing {missing[:8]}, unexpected {unexpected[:8]}")
    return theirs.to(dtype=next(backbone.parameters()).dtype).eval()
