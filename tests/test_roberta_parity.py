"""Numerical parity with transformers' RoBERTa and XLM-RoBERTa classes, both conversion
directions (fp32, max abs diff <= 1e-5): every head, eager and sdpa, no / right / left padding,
ids and inputs_embeds, gradients, and checkpoints saved by transformers."""

import pytest
import torch
import transformers

import hf_variants
from hf_variants.models.roberta.conversion import roberta_adapter
from hf_variants.registry import HEAD_AUTO_CLASSES
from encoder_tester import TINY

ATOL = 1e-5
PAD = 1
FAMILIES = ("Roberta", "XLMRoberta")
THEIR_HEADS = ["Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMultipleChoice"]
SEQUENCE_LEVEL = {"ForSequenceClassification", "ForMultipleChoice"}


def reference(family: str, head: str, impl: str, seed: int = 0) -> transformers.PreTrainedModel:
    """A random tiny transformers model; RoBERTa's real layout (514-style positions: 64 rows, pad 1, one segment)."""
    config_class = getattr(transformers, f"{family}Config")
    num_labels = 2 if head == "ForQuestionAnswering" else TINY["num_labels"]  # their QA layer has num_labels outputs
    config = config_class(**{**TINY, "num_labels": num_labels, "type_vocab_size": 1, "pad_token_id": PAD, "layer_norm_eps": 1e-5})
    config._attn_implementation = impl
    torch.manual_seed(seed)
    model = getattr(transformers, f"{family}{head}")(config).eval()
    with torch.no_grad():  # nothing stays at its zero init (biases, the LM bias), so every weight is tested
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    return model


def make_inputs(head: str, padding: str, length: int = 12) -> dict:
    """<s> ... </s> rows of different lengths; padding "none", "right" or "left" (pad id 1, mask 0)."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, TINY["vocab_size"], (3, length), generator=g)
    ids[:, 0] = 0
    mask = torch.ones_like(ids)
    if padding != "none":
        for row, real in ((1, 8), (2, 3)):
            keep = slice(0, real) if padding == "right" else slice(length - real, length)
            mask[row] = 0
            mask[row, keep] = 1
            ids[row, keep] = torch.cat([torch.tensor([0]), ids[row, keep][1:-1], torch.tensor([2])])
    ids[0, -1] = 2
    inputs = {"input_ids": ids.masked_fill(mask == 0, PAD), "attention_mask": mask}
    if head == "ForMultipleChoice":
        inputs = {k: v[:, None].repeat(1, 2, 1) for k, v in inputs.items()}
    return inputs


def at_real_tokens(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level outputs at real tokens: padding positions hold throw-away values in
    transformers and exact zeros on our padding-free path."""
    for m in (mask.bool(), mask.reshape(-1, mask.shape[-1]).bool()):
        if x.dim() >= m.dim() and tuple(x.shape[: m.dim()]) == tuple(m.shape):
            return x[m]
    return x


def assert_same_outputs(expected, got, mask: torch.Tensor, keys=None) -> int:
    """Compare every tensor output both have (token-level ones at real tokens); returns how many."""
    compared = 0
    for key in keys or expected.keys():
        if expected.get(key) is None or got.get(key) is None:
            continue
        pairs = zip(expected[key], got[key]) if isinstance(expected[key], tuple) else [(expected[key], got[key])]
        for x, y in pairs:
            torch.testing.assert_close(at_real_tokens(y, mask), at_real_tokens(x, mask), atol=ATOL, rtol=0, msg=key)
        compared += 1
    return compared


def check_parity(theirs, ours, back, head, padding):
    inputs = make_inputs(head, padding)
    mask = inputs["attention_mask"]
    with torch.no_grad():
        # Every layer's states (runs padded), then the default fast paths (packed, last layer only where read).
        expected = theirs(**inputs, output_hidden_states=True)
        assert assert_same_outputs(expected, ours(**inputs, output_hidden_states=True), mask) >= 2
        assert assert_same_outputs(expected, back(**inputs, output_hidden_states=True), mask) >= 2
        fast = ours(**inputs)
        main = [k for k in fast.keys() if k not in ("hidden_states", "attentions", "pooler_output")]
        assert assert_same_outputs(expected, fast, mask, main) >= 1
        if head == "Model":
            torch.testing.assert_close(fast.pooler_output, expected.pooler_output, atol=ATOL, rtol=0)


@pytest.mark.parametrize("padding", ["right", "left"])  # row 0 is unpadded in both
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", THEIR_HEADS)
@pytest.mark.parametrize("family", FAMILIES)
def test_parity_both_directions(family, head, impl, padding):
    theirs = reference(family, head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    assert type(ours) is getattr(hf_variants, f"Roberta{head}") and ours.config.model_type == "hfv_roberta"
    back = hf_variants.to_transformers(ours, type(theirs)).eval()
    assert type(back) is type(theirs)
    their_state, back_state = theirs.state_dict(), back.state_dict()
    assert their_state.keys() == back_state.keys()
    for key, value in their_state.items():
        assert torch.equal(value, back_state[key]), key
    check_parity(theirs, ours, back, head, padding)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("padding", ["right", "left"])
def test_pretraining_model_is_their_masked_lm(family, padding):
    theirs = reference(family, "ForMaskedLM", "sdpa")
    ours = hf_variants.RobertaForPreTraining(hf_variants.from_transformers(theirs).config)
    ours.load_state_dict(hf_variants.from_transformers(theirs).state_dict())
    ours.eval()
    back = hf_variants.to_transformers(ours, type(theirs)).eval()
    assert type(back) is type(theirs)
    check_parity(theirs, ours, back, "ForMaskedLM", padding)


def test_to_transformers_defaults_to_roberta_and_xlm_roberta_converts_back():
    theirs = reference("XLMRoberta", "ForSequenceClassification", "sdpa")
    ours = hf_variants.from_transformers(theirs)
    assert type(hf_variants.to_transformers(ours)) is transformers.RobertaForSequenceClassification
    assert type(hf_variants.to_transformers(ours, transformers.XLMRobertaForSequenceClassification)).__name__ == (
        "XLMRobertaForSequenceClassification")
    with pytest.raises(ValueError, match="of class BertForSequenceClassification"):
        hf_variants.to_transformers(ours, transformers.BertForSequenceClassification)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", ["Model", "ForMaskedLM", "ForTokenClassification"])
def test_inputs_embeds_with_padding(head, impl):
    """inputs_embeds: positions p+1..p+T on every row (nothing marks padding), on both sides."""
    theirs = reference("Roberta", head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = make_inputs(head, "right")
    embeds = theirs.get_input_embeddings()(inputs.pop("input_ids"))
    with torch.no_grad():
        expected = theirs(inputs_embeds=embeds, **inputs)
        got = ours(inputs_embeds=embeds, **inputs)
    assert assert_same_outputs(expected, got, inputs["attention_mask"]) >= 1


GRADIENT_LABELS = {
    "ForMaskedLM": lambda ids, g: {"labels": ids.masked_fill(torch.rand(ids.shape, generator=g) > 0.4, -100).masked_fill(ids == PAD, -100)},
    "ForSequenceClassification": lambda ids, g: {"labels": torch.tensor([0, 2, 1])},
    "ForTokenClassification": lambda ids, g: {"labels": torch.randint(0, 3, ids.shape, generator=g).masked_fill(ids == PAD, -100)},
    "ForQuestionAnswering": lambda ids, g: {"start_positions": torch.tensor([1, 2, 0]), "end_positions": torch.tensor([3, 5, 1])},
    "ForMultipleChoice": lambda ids, g: {"labels": torch.tensor([1, 0, 1])},
}


@pytest.mark.parametrize("padding", ["right", "left"])
@pytest.mark.parametrize("head", list(GRADIENT_LABELS))
def test_gradients_match_transformers(head, padding):
    theirs = reference("Roberta", head, "eager")
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = make_inputs(head, padding)
    ids = inputs["input_ids"] if head != "ForMultipleChoice" else inputs["input_ids"][:, 0]
    labels = GRADIENT_LABELS[head](ids, torch.Generator().manual_seed(2))
    loss_theirs, loss_ours = theirs(**inputs, **labels).loss, ours(**inputs, **labels).loss
    torch.testing.assert_close(loss_ours, loss_theirs, atol=ATOL, rtol=0)
    loss_theirs.backward()
    loss_ours.backward()
    our_grads = roberta_adapter(head).to_theirs(
        {name: p.grad if p.grad is not None else torch.zeros_like(p) for name, p in ours.named_parameters()}
    )
    their_params = dict(theirs.named_parameters())
    assert set(their_params) <= set(our_grads)
    for name, p in their_params.items():
        their_grad = p.grad if p.grad is not None else torch.zeros_like(p)
        torch.testing.assert_close(our_grads[name], their_grad, atol=ATOL, rtol=0, msg=name)


@pytest.mark.parametrize("head", THEIR_HEADS + ["ForPreTraining"])
@pytest.mark.parametrize("family", FAMILIES)
def test_folder_saved_by_transformers_loads_with_identical_outputs(family, head, tmp_path):
    their_head = "ForMaskedLM" if head == "ForPreTraining" else head
    theirs = reference(family, their_head, "sdpa")
    theirs.save_pretrained(tmp_path)
    ours = hf_variants.load_pretrained(str(tmp_path), HEAD_AUTO_CLASSES[head]).eval()
    # transformers' AutoModelForPreTraining builds RobertaForMaskedLM for RoBERTa: so do we.
    assert type(ours) is getattr(hf_variants, f"Roberta{their_head}")
    inputs = make_inputs(their_head, "right")
    with torch.no_grad():
        assert assert_same_outputs(theirs(**inputs), ours(**inputs), inputs["attention_mask"], ["last_hidden_state", "logits", "start_logits", "end_logits"]) >= 1


@pytest.mark.parametrize("bad", [dict(pre_layer_norm=True), dict(layer_sharing="all"), dict(type_vocab_size=0), dict(norm_type="rms_norm")])
def test_to_transformers_refuses_what_roberta_cannot_express(bad):
    model = hf_variants.RobertaModel(hf_variants.RobertaConfig(**{**TINY, **bad}))
    with pytest.raises(ValueError, match=next(iter(bad))):
        hf_variants.to_transformers(model)
