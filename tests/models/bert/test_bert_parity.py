"""Numerical parity with transformers' BERT, both conversion directions (fp32, max abs diff <= 1e-5)."""

import pytest
import torch
import transformers

import hf_variants
from tests.common.encoder_tester import TINY
from tests.common.inputs import make_inputs
from tests.common.parity import ATOL, assert_same_outputs, grads_as_model

HEADS = list(hf_variants.registry.SPECS["hfv_bert"].classes)


def reference(head: str, impl: str) -> transformers.PreTrainedModel:
    config = transformers.BertConfig(**{**TINY, "num_labels": 2 if head == "ForQuestionAnswering" else 3})
    config._attn_implementation = impl
    torch.manual_seed(0)
    return getattr(transformers, f"Bert{head}")(config).eval()


def bert_inputs(head: str, padding: bool, segments: bool) -> dict:
    return make_inputs(
        TINY["vocab_size"],
        "right" if padding else "none",
        segments=segments,
        choices=2 if head == "ForMultipleChoice" else None,
    )


# Both paths of the speed plug-in (config.padding_free, hf_variants/modules/fast_path.py): the plain
# PyTorch path, and the padding-free / last-layer-only path that runs on CPU by default.
PATHS = {"plain": False, "fast": True}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("padding,segments", [(False, False), (True, True), (True, False)])
def test_parity_both_directions(head, impl, padding, segments, path):
    theirs = reference(head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    assert type(ours).__module__.startswith("hf_variants") and ours.config.model_type == "hfv_bert"
    ours.config.padding_free = PATHS[path]
    back = hf_variants.to_transformers(ours).eval()
    assert type(back) is type(theirs)
    for key, value in theirs.state_dict().items():
        assert torch.equal(value, back.state_dict()[key]), key
    inputs = bert_inputs(head, padding, segments)
    # Every layer's states are the plain path's to return (the fast path steps aside for them):
    # the fast path is compared on the heads' outputs.
    every_layer = {"output_hidden_states": True} if path == "plain" else {}
    with torch.no_grad():
        expected = theirs(**inputs, **every_layer)
        assert_same_outputs(expected, ours(**inputs, **every_layer), inputs["attention_mask"], at_least=1)
        assert_same_outputs(expected, back(**inputs, **every_layer), inputs["attention_mask"], at_least=1)


@pytest.mark.parametrize("head", ["Model", "ForMaskedLM", "ForTokenClassification", "ForSequenceClassification"])
def test_padding_free_path_matches_transformers(head):
    theirs = reference(head, "sdpa")
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = True
    inputs = bert_inputs(head, padding=True, segments=True)
    keep = inputs["attention_mask"].bool()
    with torch.no_grad():
        expected, got = theirs(**inputs), ours(**inputs)
    key = "last_hidden_state" if head == "Model" else "logits"
    if head == "ForSequenceClassification":
        torch.testing.assert_close(got[key], expected[key], atol=ATOL, rtol=0)
    else:
        torch.testing.assert_close(got[key][keep], expected[key][keep], atol=ATOL, rtol=0)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("head", ["ForMaskedLM", "ForSequenceClassification", "ForQuestionAnswering"])
def test_gradients_match_transformers(head, path):
    theirs = reference(head, "eager")
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = PATHS[path]
    inputs = bert_inputs(head, padding=True, segments=True)
    g = torch.Generator().manual_seed(2)
    if head == "ForMaskedLM":
        labels = {"labels": inputs["input_ids"].masked_fill(torch.rand(3, 12, generator=g) > 0.4, -100)}
    elif head == "ForSequenceClassification":
        labels = {"labels": torch.tensor([0, 2, 1])}
    else:
        labels = {"start_positions": torch.tensor([1, 2, 0]), "end_positions": torch.tensor([3, 5, 1])}
    loss_theirs = theirs(**inputs, **labels).loss
    loss_ours = ours(**inputs, **labels).loss
    torch.testing.assert_close(loss_ours, loss_theirs, atol=ATOL, rtol=0)
    loss_theirs.backward()
    loss_ours.backward()
    grads_ours = hf_variants.to_transformers(grads_as_model(ours)).state_dict()
    for name, p in theirs.named_parameters():
        torch.testing.assert_close(grads_ours[name], p.grad, atol=ATOL, rtol=0, msg=name)


def test_to_transformers_refuses_what_bert_cannot_express():
    model = hf_variants.BertModel(hf_variants.BertConfig(**{**TINY, "pre_layer_norm": True}))
    with pytest.raises(ValueError, match="pre_layer_norm"):
        hf_variants.to_transformers(model)


def test_unknown_class_is_refused():
    with pytest.raises(ValueError, match="no hf-variants equivalent"):
        hf_variants.from_transformers(
            transformers.GPTJModel(transformers.GPTJConfig(n_layer=1, n_embd=8, n_head=2, rotary_dim=4))
        )
