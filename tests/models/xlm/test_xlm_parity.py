"""Numerical parity with transformers' XLM (eager, its only kernel), both conversion directions,
our eager and SDPA kernels and the padding-free path, right and left padding, with language ids
(fp32, max abs diff <= 1e-5). transformers zeroes the states at padding positions and so do we:
every position is compared, hidden states of every layer included."""

import pytest
import torch
import transformers

import hf_variants
from tests.common.inputs import as_choices, make_inputs
from tests.common.parity import ATOL, grads_as_model

# Our head name -> transformers' class name.
THEIR_CLASSES = {
    "Model": "XLMModel",
    "ForMaskedLM": "XLMWithLMHeadModel",
    "ForSequenceClassification": "XLMForSequenceClassification",
    "ForTokenClassification": "XLMForTokenClassification",
    "ForQuestionAnswering": "XLMForQuestionAnsweringSimple",
    "ForMultipleChoice": "XLMForMultipleChoice",
}
TINY = dict(vocab_size=99, emb_dim=32, n_layers=2, n_heads=4, n_langs=3, max_position_embeddings=64)


def reference(head: str, **overrides) -> transformers.PreTrainedModel:
    config = transformers.XLMConfig(**{**TINY, "num_labels": 2 if head == "ForQuestionAnswering" else 3, **overrides})
    torch.manual_seed(0)
    return getattr(transformers, THEIR_CLASSES[head])(config).eval()


def xlm_inputs(head: str, padding: str, pad_token_id: int = 2) -> dict[str, torch.Tensor]:
    """3 rows of 12 with two languages each; padding none | right | left (rows 1 and 2)."""
    g = torch.Generator().manual_seed(1)
    inputs = make_inputs(TINY["vocab_size"], padding, low=3, pad_token_id=pad_token_id, generator=g)
    inputs["langs"] = torch.randint(0, TINY["n_langs"], (3, 12), generator=g)
    return as_choices(inputs, 2) if head == "ForMultipleChoice" else inputs


def assert_same_outputs(expected, got) -> int:
    """Every tensor output of transformers' (hidden states of every layer included) equals ours."""
    compared = 0
    for key, value in expected.items():
        if key == "attentions" or value is None:
            continue
        pairs = zip(value, got[key]) if isinstance(value, tuple) else [(value, got[key])]
        for theirs, ours in pairs:
            torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0, msg=key)
        compared += 1
    assert compared >= 2
    return compared


@pytest.mark.parametrize("padding", ["none", "right", "left"])
@pytest.mark.parametrize("head", list(THEIR_CLASSES))
def test_parity_both_directions(head, padding):
    """Our eager and SDPA kernels, padded and padding-free, against transformers' eager XLM."""
    theirs = reference(head)
    ours = hf_variants.from_transformers(theirs).eval()
    assert type(ours) is hf_variants.registry.SPECS["hfv_xlm"].classes[head]
    back = hf_variants.to_transformers(ours).eval()
    assert type(back) is type(theirs)
    assert_same_state(theirs, back)
    inputs = xlm_inputs(head, padding)
    with torch.no_grad():
        expected = theirs(**inputs, output_hidden_states=True)
        assert_same_outputs(expected, back(**inputs, output_hidden_states=True))
        main = next(iter(expected.values()))
        for impl in ("eager", "sdpa"):
            for padding_free in (False, True):
                ours.config._attn_implementation, ours.config.padding_free = impl, padding_free
                assert_same_outputs(expected, ours(**inputs, output_hidden_states=True))
                # Without hidden states our heads may run packed and compute the last layer where read only.
                torch.testing.assert_close(ours(**inputs)[0], main, atol=ATOL, rtol=0, msg=f"{impl} {padding_free}")


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_attention_maps_match_at_real_queries(impl):
    theirs = reference("Model")
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config._attn_implementation = "eager"  # attention maps come from the eager kernel (as transformers)
    inputs = xlm_inputs("Model", "right")
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        expected, got = theirs(**inputs, output_attentions=True), ours(**inputs, output_attentions=True)
    for a, b in zip(expected.attentions, got.attentions):
        # (B, heads, T, T) -> rows of real queries (padding queries' states are zeroed, not attended with)
        torch.testing.assert_close(b.permute(0, 2, 1, 3)[real], a.permute(0, 2, 1, 3)[real], atol=ATOL, rtol=0)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(sinusoidal_embeddings=True),
        dict(gelu_activation=False),
        dict(causal=True),
        dict(use_lang_emb=False),
        dict(n_langs=1),
        dict(summary_type="last", summary_activation="tanh"),
        dict(summary_proj_to_labels=False, num_labels=32),
    ],
    ids=["sinusoidal", "relu", "causal", "no_lang_emb", "monolingual", "summary_last_tanh", "summary_to_hidden"],
)
@pytest.mark.parametrize("head", ["Model", "ForMaskedLM", "ForMultipleChoice"])
def test_parity_of_the_config_options(overrides, head):
    """Right padding: transformers' causal XLM does not mask padding keys, which only later
    (padding) positions can see; with left padding its real tokens would attend to padding.
    summary_proj_to_labels=False: transformers' logits_proj takes num_labels inputs while the
    summary is H wide, so it runs only with num_labels == H (ours sizes logits_proj by the summary)."""
    if "summary_proj_to_labels" in overrides and head != "ForMultipleChoice":
        pytest.skip("only multiple choice projects the summary onward (sequence classification refuses it)")
    theirs = reference(head, **overrides)
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = xlm_inputs(head, "right")
    if theirs.config.n_langs == 1:
        inputs["langs"] = torch.zeros_like(inputs["langs"])
    with torch.no_grad():
        expected = theirs(**inputs, output_hidden_states=True)
        for impl in ("eager", "sdpa"):
            ours.config._attn_implementation = impl
            assert_same_outputs(expected, ours(**inputs, output_hidden_states=True))
    assert_same_state(theirs, hf_variants.to_transformers(ours))


def assert_same_state(a: torch.nn.Module, b: torch.nn.Module) -> None:
    state_a, state_b = a.state_dict(), b.state_dict()
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert torch.equal(state_a[key], state_b[key]), key


@pytest.mark.parametrize("head", ["Model", "ForSequenceClassification"])
def test_token_type_ids_no_attention_mask_and_lengths(head):
    """XLM tokenizers return token_type_ids (transformers adds their *word* embeddings); without
    an attention mask transformers masks the pad tokens, or the positions past `lengths`."""
    theirs = reference(head)
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = xlm_inputs(head, "right")
    types = (torch.arange(12) >= 5).long().expand(3, 12) * inputs["attention_mask"]
    lengths = inputs["attention_mask"].sum(1)
    without_mask = {k: v for k, v in inputs.items() if k != "attention_mask"}
    with torch.no_grad():
        for call in (dict(inputs, token_type_ids=types), without_mask, dict(without_mask, lengths=lengths)):
            torch.testing.assert_close(ours(**call)[0], theirs(**call)[0], atol=ATOL, rtol=0)


@pytest.mark.parametrize(
    "head", ["ForMaskedLM", "ForSequenceClassification", "ForQuestionAnswering", "ForMultipleChoice"]
)
def test_losses_and_gradients_match_transformers(head):
    theirs = reference(head)
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = xlm_inputs(head, "right")
    g = torch.Generator().manual_seed(2)
    labels = {
        "ForMaskedLM": lambda: {"labels": inputs["input_ids"].masked_fill(torch.rand(3, 12, generator=g) > 0.4, -100)},
        "ForSequenceClassification": lambda: {"labels": torch.tensor([0, 2, 1])},
        "ForQuestionAnswering": lambda: {
            "start_positions": torch.tensor([1, 2, 0]),
            "end_positions": torch.tensor([3, 5, 1]),
        },
        "ForMultipleChoice": lambda: {"labels": torch.tensor([1, 0, 1])},
    }[head]()
    loss_theirs, loss_ours = theirs(**inputs, **labels).loss, ours(**inputs, **labels).loss
    torch.testing.assert_close(loss_ours, loss_theirs, atol=ATOL, rtol=0)
    loss_theirs.backward()
    loss_ours.backward()
    grads_ours = hf_variants.to_transformers(grads_as_model(ours)).state_dict()
    for name, p in theirs.named_parameters():
        torch.testing.assert_close(grads_ours[name], p.grad, atol=ATOL, rtol=0, msg=name)


@pytest.mark.parametrize("head", list(THEIR_CLASSES))
def test_folder_saved_by_transformers_loads(head, tmp_path):
    """A checkpoint saved by transformers' XLM class loads with identical outputs, through our
    class's from_pretrained (converted on load by the key map) and through hf_variants.load_pretrained
    with the Auto class transformers maps XLM to; saved again, it is in our format."""
    from hf_variants.registry import HEAD_AUTO_CLASSES

    theirs = reference(head, lang2id={"en": 0, "fr": 1, "de": 2}, sinusoidal_embeddings=head == "ForMaskedLM")
    theirs.save_pretrained(tmp_path / "theirs")
    our_class = hf_variants.registry.SPECS["hfv_xlm"].classes[head]
    ours, info = our_class.from_pretrained(tmp_path / "theirs", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    auto = hf_variants.load_pretrained(str(tmp_path / "theirs"), HEAD_AUTO_CLASSES[head])
    assert type(auto) is our_class and auto.config.lang2id == {"en": 0, "fr": 1, "de": 2}
    assert ours.config.position_embedding_type == ("sinusoidal" if head == "ForMaskedLM" else "learned")
    ours.save_pretrained(tmp_path / "ours")
    again = our_class.from_pretrained(tmp_path / "ours")
    assert again.config.model_type == "hfv_xlm"
    inputs = xlm_inputs(head, "left")
    with torch.no_grad():
        expected = theirs(**inputs)[0]
        for model in (ours, auto.eval(), again.eval()):
            torch.testing.assert_close(model.eval()(**inputs)[0], expected, atol=ATOL, rtol=0)


def test_to_transformers_refuses_what_xlm_cannot_express():
    config = hf_variants.XLMConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128
    )
    for field, value in [
        ("pre_layer_norm", True),
        ("intermediate_size", 100),
        ("hidden_act", "gelu_new"),
        ("use_bias", False),
    ]:
        model = hf_variants.XLMModel(hf_variants.XLMConfig(**{**config.to_dict(), field: value}))
        with pytest.raises(ValueError, match=field):
            hf_variants.to_transformers(model)
    with pytest.raises(ValueError, match="asm"):
        hf_variants.from_transformers(reference("Model", asm=True, asm_cutoffs=[10], asm_div_value=4.0))
