"""No silent random weights: a checkpoint of another architecture, or one that supplies (almost)
none of the encoder's weights, makes ``from_pretrained`` raise a ValueError that names what the
checkpoint is and what to do; a missing task head stays the normal reported case (tested in
test_from_pretrained_transformers_checkpoints.py)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import transformers

import hf_variants

TINY_BERT = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2")
    config = transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("t5")
    config = transformers.T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4)
    transformers.T5Model(config).save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "model_class",
    [hf_variants.BertModel, hf_variants.BertForSequenceClassification, hf_variants.SpanBertForQuestionAnswering],
)
def test_other_architecture_folders_raise(gpt2_folder, t5_folder, model_class):
    with pytest.raises(ValueError, match=r"model_type 'gpt2', architectures \['GPT2LMHeadModel'\].*from_config"):
        model_class.from_pretrained(gpt2_folder)
    with pytest.raises(ValueError, match=r"model_type 't5'.*transformers.AutoModel.from_pretrained"):
        model_class.from_pretrained(t5_folder)


def test_config_class_refuses_another_architecture(gpt2_folder):
    with pytest.raises(ValueError, match=r"'gpt2'.*BertConfig reads only 'hfv_bert', 'bert'"):
        hf_variants.BertConfig.from_pretrained(gpt2_folder)


@pytest.mark.parametrize("config_kind", ["ours", "transformers"])
def test_weights_of_another_architecture_under_a_bert_config_raise(tmp_path, gpt2_folder, config_kind):
    """The config says BERT (ours or transformers'), the weights are GPT-2's: nothing of the encoder
    would load, so from_pretrained refuses instead of returning a randomly initialised model."""
    if config_kind == "ours":
        hf_variants.BertConfig(**TINY_BERT).save_pretrained(tmp_path)
    else:
        transformers.BertConfig(**TINY_BERT).save_pretrained(tmp_path)
    shutil.copy(gpt2_folder / "model.safetensors", tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=r"supplies 0 of the \d+ encoder weights of BertForMaskedLM.*from_config"):
        hf_variants.BertForMaskedLM.from_pretrained(tmp_path)


def test_a_checkpoint_with_only_the_embeddings_raises(tmp_path):
    """'Almost none': the embeddings alone are far from an encoder."""
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(**TINY_BERT)).save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    save_file(
        {k: v for k, v in state.items() if k.startswith("embeddings.")},
        tmp_path / "model.safetensors",
        metadata={"format": "pt"},
    )
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "bert"
    with pytest.raises(ValueError, match=r"supplies 5 of the \d+ encoder weights.*model_type 'bert'"):
        hf_variants.BertModel.from_pretrained(tmp_path)


def test_our_own_checkpoints_and_partial_heads_still_load(tmp_path):
    """The check does not fire for the normal cases: our own checkpoint, and our bare encoder into a head model."""
    torch.manual_seed(0)
    model = hf_variants.BertModel(hf_variants.BertConfig(**TINY_BERT)).eval()
    model.save_pretrained(tmp_path)
    classifier, info = hf_variants.BertForTokenClassification.from_pretrained(
        tmp_path, num_labels=4, output_loading_info=True
    )
    assert sorted(info["missing_keys"]) == ["classifier.bias", "classifier.weight"]
    reloaded = hf_variants.BertModel.from_pretrained(tmp_path)
    ids = torch.randint(1, 99, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids).last_hidden_state, model(ids).last_hidden_state, atol=0, rtol=0)
