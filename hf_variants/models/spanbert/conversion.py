"""SpanBERT <-> BERT-format weights.

The released SpanBERT checkpoints are plain BERT checkpoints (transformers ``BertModel`` keys,
no MLM/SBO head), so SpanBERT reuses BERT's explicit key map (``models/bert/conversion.py``):

- :func:`load_bert_checkpoint` reads such a checkpoint (folder or transformers model) into any
  SpanBERT class and reports which weights were freshly initialised (the heads) or left unused;
- :func:`export_bert_encoder` turns a SpanBERT encoder back into a transformers ``BertModel`` for
  users without hf-variants;
- ``hf_variants.to_transformers`` maps SpanBERT models with a BERT counterpart (every head but
  the SBO pretraining model) onto transformers' BERT classes.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file
from transformers import PreTrainedModel

from ...conversion import ConversionPair, StateDictAdapter, register_conversion, shared_config_fields
from ..bert import conversion as bert_conversion
from . import modeling_spanbert as ours
from .configuration_spanbert import SpanBertConfig

logger = logging.getLogger(__name__)

# The BERT-format encoder prefixes (the bare BertModel has none) and the MLM head's key map.
ENCODER_KEY = re.compile(r"^(bert\.)?(embeddings|encoder|pooler)\.")
MLM_HEAD_ADAPTER = StateDictAdapter(
    renames=bert_conversion.head_renames(bert_conversion.MLM_HEAD) + bert_conversion.MLM_DECODER,
    ignored=bert_conversion.MLM_IGNORED,
)
# Buffers old transformers versions saved with the weights; not parameters.
BUFFER_KEYS = re.compile(r"(^|\.)embeddings\.(position_ids|token_type_ids)$")


def config_to_ours(config: transformers.BertConfig, **overrides) -> SpanBertConfig:
    """A transformers BertConfig (or any BERT-field config) -> SpanBertConfig with SBO defaults."""
    fields = shared_config_fields(config, SpanBertConfig)
    fields.pop("architectures", None)
    fields["position_embedding_type"] = "learned"
    fields.update(overrides)
    return SpanBertConfig(**fields)


def config_to_theirs(config: SpanBertConfig) -> transformers.BertConfig:
    """SpanBertConfig -> transformers BertConfig (the SBO fields have no counterpart and are dropped)."""
    return bert_conversion.config_to_theirs(config)


# ----------------------------------------------------------------------------- reading BERT checkpoints
def download_bert_checkpoint(repo_id: str) -> Path:
    """A Hub repository (e.g. "SpanBERT/spanbert-base-cased") -> its local snapshot folder."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=["*.json", "*.safetensors", "pytorch_model.bin", "*.txt"]))
    except Exception as error:  # offline, unknown repository, bad id: all mean "no checkpoint here"
        raise ValueError(f"{repo_id!r} is not a local folder and could not be fetched from the Hub: {error}") from error


def read_bert_checkpoint(source: str | Path | PreTrainedModel) -> tuple[transformers.BertConfig, dict[str, torch.Tensor]]:
    """(config, state dict) of a BERT-format checkpoint: a folder, a Hub id or a transformers BERT model."""
    if isinstance(source, PreTrainedModel):
        if source.config.model_type != "bert":
            raise ValueError(f"expected a transformers BERT model, got model_type {source.config.model_type!r}")
        return source.config, source.state_dict()
    folder = Path(source) if Path(source).is_dir() else download_bert_checkpoint(str(source))
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ValueError(f"{folder} has no config.json; expected a BERT-format checkpoint folder")
    model_type = json.loads(config_file.read_text()).get("model_type")
    if model_type != "bert":
        raise ValueError(
            f"{folder} holds a {model_type!r} checkpoint, not a BERT-format one (model_type 'bert'); "
            "load hf-variants checkpoints with from_pretrained"
        )
    config = transformers.BertConfig.from_pretrained(folder)
    if (folder / "model.safetensors").is_file():
        return config, load_file(folder / "model.safetensors")
    index_file = folder / "model.safetensors.index.json"
    if index_file.is_file():
        state: dict[str, torch.Tensor] = {}
        for shard in sorted(set(json.loads(index_file.read_text())["weight_map"].values())):
            state.update(load_file(folder / shard))
        return config, state
    if (folder / "pytorch_model.bin").is_file():
        return config, torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise ValueError(f"{folder} has no model.safetensors, model.safetensors.index.json or pytorch_model.bin")


def bert_state_to_ours(state: dict[str, torch.Tensor], backbone_prefix: str) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Map a BERT-format state dict onto our names: the encoder with BERT's adapter (placed under
    ``backbone_prefix``), ``cls.predictions`` onto ``mlm_head``. Returns (our weights, checkpoint
    keys with no SpanBERT counterpart, such as the NSP head)."""
    encoder, mlm_head, unmapped = {}, {}, []
    for key, tensor in state.items():
        # TF-era checkpoints name LayerNorm parameters gamma/beta.
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key))
        if BUFFER_KEYS.search(key):
            continue
        if ENCODER_KEY.match(key):
            encoder[key.removeprefix("bert.")] = tensor
        elif key.startswith("cls.predictions."):
            mlm_head[key] = tensor
        else:
            unmapped.append(key)
    mapped = {backbone_prefix + k: v for k, v in bert_conversion.bert_adapter("Model").to_ours(encoder).items()}
    mapped.update(MLM_HEAD_ADAPTER.to_ours(mlm_head))
    return mapped, unmapped


def load_bert_checkpoint(
    model_class: type, source: str | Path | PreTrainedModel, output_loading_info: bool = False, **config_overrides
):
    """Build ``model_class`` (a SpanBERT class) from a BERT-format checkpoint.

    Returns the model, or (model, {"initialised": [...], "unused": [...]}) with
    ``output_loading_info``. Initialised weights are also logged as a warning, as
    ``from_pretrained`` does for new heads.
    """
    their_config, state = read_bert_checkpoint(source)
    model = model_class(config_to_ours(their_config, **config_overrides))
    backbone_prefix = f"{model.base_model_prefix}." if hasattr(model, model.base_model_prefix) else ""
    mapped, unmapped = bert_state_to_ours(state, backbone_prefix)
    expected = model.state_dict()
    tied_copies = set(getattr(model, "all_tied_weights_keys", None) or {})
    # A tied decoder is the word embedding matrix: the checkpoint's copy of it is not loaded twice.
    loadable = {k: v for k, v in mapped.items() if k in expected and k not in tied_copies}
    for key, tensor in loadable.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise ValueError(
                f"checkpoint weight {key} has shape {tuple(tensor.shape)}, the model expects {tuple(expected[key].shape)}"
            )
    model.load_state_dict(loadable, strict=False)
    info = {
        "initialised": sorted(set(expected) - set(loadable) - tied_copies),
        "unused": sorted([k for k in mapped if k not in expected] + unmapped),
    }
    if info["initialised"]:
        logger.warning(
            "%s: weights not in the BERT checkpoint, newly initialised: %s", model_class.__name__, info["initialised"]
        )
    model.eval()
    return (model, info) if output_loading_info else model


# ----------------------------------------------------------------------------- export to plain BERT
def export_bert_encoder(model: PreTrainedModel) -> transformers.BertModel:
    """The encoder of any SpanBERT model as a transformers ``BertModel`` with identical weights
    (and no pooler when the model has none). Save it with ``save_pretrained``."""
    backbone = getattr(model, model.base_model_prefix, model)
    config = model.config
    their_state = bert_conversion.bert_adapter("Model").to_theirs(backbone.state_dict())
    if config.type_vocab_size == 0:
        # transformers' BERT always adds a segment embedding: one all-zero row is exactly "none".
        config = copy.deepcopy(config)
        config.type_vocab_size = 1
        their_state["embeddings.token_type_embeddings.weight"] = torch.zeros(1, config.hidden_size)
    theirs = transformers.BertModel(config_to_theirs(config), add_pooling_layer=backbone.pooler is not None)
    missing, unexpected = theirs.load_state_dict(their_state, strict=False)
    missing = [k for k in missing if not BUFFER_KEYS.search(k)]
    if missing or unexpected:
        raise ValueError(f"BERT export mismatch: missing {missing[:8]}, unexpected {unexpected[:8]}")
    return theirs.to(dtype=next(backbone.parameters()).dtype).eval()


# The heads with a transformers BERT counterpart (SpanBertForPreTraining has the SBO, BERT's has NSP).
CONVERTIBLE_HEADS = (
    "Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMultipleChoice",
)
for _head in CONVERTIBLE_HEADS:
    register_conversion(
        ConversionPair(
            ours=getattr(ours, f"SpanBert{_head}"),
            theirs=getattr(transformers, f"Bert{_head}"),
            adapter=bert_conversion.bert_adapter(_head),
            config_to_ours=config_to_ours,
            config_to_theirs=config_to_theirs,
        )
    )
