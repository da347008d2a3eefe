"""Property tests over every registered variant and head (CI sample of tests/reliability/fuzz/fuzz_variants.py).

Parametrized from ``hf_variants.registry.SPECS`` at collection: a variant added later is fuzzed
with no new test code. Each (variant, head, property) runs a few hypothesis cases, derandomized
so CI is reproducible; ``HFV_FUZZ_EXAMPLES=N`` raises the count (the nightly size is the script:
``python -m tests.reliability.fuzz.fuzz_variants --cases-per-variant 1000``).
"""

import os

import pytest

from tests.reliability.fuzz import fuzz_variants

EXAMPLES = int(os.environ.get("HFV_FUZZ_EXAMPLES", "1"))
CASES = [(spec, head) for spec, head in fuzz_variants.variant_heads()]

# Variants whose cases run as non-strict xfail until the fuzzer and the variant have been through
# a nightly-size pass (tests/reliability/fuzz/fuzz_variants.py --variants NAME): put a newly landed variant here
# if its first run finds what cannot be fixed at once, and take it out when its cases pass. Every
# variant of this wave has been through it (tests/reliability/fuzz/RESULTS.md).
NOT_YET_FUZZ_HARDENED: set[str] = set()


def _case(spec, head):
    marks = []
    if spec.name in NOT_YET_FUZZ_HARDENED:
        marks.append(pytest.mark.xfail(reason=f"{spec.name} is not yet fuzz-hardened (issue #21 part B)", strict=False))
    return pytest.param(spec, head, marks=marks, id=f"{spec.name}-{head}")


@pytest.mark.parametrize("prop", fuzz_variants.PROPERTIES)
@pytest.mark.parametrize("spec,head", [_case(spec, head) for spec, head in CASES])
def test_property(spec, head, prop):
    fuzz_variants.run_property(prop, spec, head, EXAMPLES, derandomize=EXAMPLES <= 10)


def test_every_variant_and_head_is_covered():
    """The parametrization is the registry's: every head of every spec, every property."""
    from hf_variants.registry import SPECS

    assert {(s.name, h) for s, h in CASES} == {(s.name, h) for s in SPECS.values() for h in s.classes}
    assert len(CASES) >= 3


def test_choice_probe_keeps_what_a_variant_accepts():
    """ViT pins pre-LN, learned positions and the [CLS] summary; BERT accepts every choice."""
    from hf_variants.registry import SPECS

    bert = fuzz_variants.accepted_choices(SPECS["hfv_bert"])
    assert bert["pre_layer_norm"] == (False, True) and len(bert["summary_type"]) == 4
    vit = fuzz_variants.accepted_choices(SPECS["hfv_vit"])
    assert vit["pre_layer_norm"] == (True,) and vit["summary_type"] == ("first",)
    assert vit["position_embedding_type"] == ("learned",)


# The two batch-invariance findings of the first nightly run (tests/reliability/fuzz/RESULTS.md), as drawn.
# Each: (variant, head, drawn config fields, drawn input shape, the row over the plain bound).
BERT_NSP_CASE = (
    "bert",
    "ForNextSentencePrediction",
    {
        "num_attention_heads": 3,
        "hidden_size": 12,
        "num_hidden_layers": 3,
        "intermediate_size": 38,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.0,
        "num_labels": 3,
        "initializer_range": 1.0,
        "pre_layer_norm": False,
        "norm_type": "layer_norm",
        "layer_sharing": "ffn",
        "position_embedding_type": "learned",
        "summary_type": "mean",
        "is_decoder": False,
        "gated_ffn": True,
        "use_bias": True,
        "hidden_act": "relu",
        "padding_free": True,
        "sparse_prediction": False,
        "attention_scale": 1.0,
        "layer_norm_eps": 1e-06,
        "vocab_size": 95,
        "max_position_embeddings": 8,
        "type_vocab_size": 1,
        "pad_token_id": 3,
        "_attn": "sdpa",
        "_seed": 6,
    },
    {"batch": 4, "seed": 32961, "length": 6, "lengths": [1, 1, 2, 6], "left": False, "choices": 1, "decoder_length": 1},
    2,
)
ROBERTA_MLM_CASE = (
    "roberta",
    "ForMaskedLM",
    {
        "num_attention_heads": 4,
        "hidden_size": 32,
        "num_hidden_layers": 3,
        "intermediate_size": 5,
        "hidden_dropout_prob": 0.5,
        "attention_probs_dropout_prob": 0.1,
        "num_labels": 3,
        "initializer_range": 1.0,
        "pre_layer_norm": False,
        "norm_type": "rms_norm",
        "layer_sharing": "none",
        "position_embedding_type": "learned",
        "summary_type": "first",
        "is_decoder": True,
        "gated_ffn": False,
        "use_bias": False,
        "hidden_act": "silu",
        "padding_free": False,
        "sparse_prediction": True,
        "attention_scale": None,
        "layer_norm_eps": 1e-06,
        "vocab_size": 53,
        "max_position_embeddings": 13,
        "type_vocab_size": 1,
        "pad_token_id": 1,
        "bos_token_id": 4,
        "eos_token_id": 3,
        "_attn": "eager",
        "_seed": 6406,
    },
    {"batch": 3, "seed": 191, "length": 9, "lengths": [7, 7, 3], "left": False, "choices": 1, "decoder_length": 2},
    0,
)


def spec_named(name):
    from hf_variants.registry import SPECS

    return next(spec for spec in SPECS.values() if spec.name == name)


# build/make_inputs reject draws with hypothesis.assume, which warns when called outside a property.
DRAWS_OUTSIDE_HYPOTHESIS = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")


@DRAWS_OUTSIDE_HYPOTHESIS
@pytest.mark.parametrize("case", [BERT_NSP_CASE, ROBERTA_MLM_CASE], ids=["bert-nsp", "roberta-mlm"])
def test_batch_invariance_findings_are_float32_rounding(case):
    """Found over the plain 1e-5 bound in float32 (BERT's 2.2e-5 at logits ~1, RoBERTa's 1.5e-4
    at logits ~14), but in float64 the batch and the row agree to ~1e-14, and the float32 gap is
    within the two float32 evaluations' own errors against float64: the derived check passes them.
    Whether the float32 gap crosses the plain bound depends on the CPU's matmul blocking (within it
    on the machines of earlier sessions, over it on an AVX2 AMD EPYC in CI), so only the
    machine-independent statement is asserted: the gap never exceeds the rounding it is blamed on."""
    import torch

    name, head, fields, shape, row = case
    spec = spec_named(name)
    model, _ = fuzz_variants.build(spec, head, fields)
    inputs = fuzz_variants.make_inputs(spec, head, model, shape)
    row_inputs = {k: v[row : row + 1] for k, v in inputs.items()}
    with torch.no_grad():
        together, alone = model(**inputs).logits[row : row + 1], model(**row_inputs).logits
        exact = fuzz_variants.float64_copy(model)
        together64 = exact(**fuzz_variants.as_float64(inputs)).logits[row : row + 1]
        alone64 = exact(**fuzz_variants.as_float64(row_inputs)).logits
    real = inputs["attention_mask"][row : row + 1].bool() if together.dim() == 3 else slice(None)
    assert (alone64 - together64)[real].abs().max().item() < 1e-12
    row_mask = None if together.dim() == 2 else inputs["attention_mask"][row : row + 1]
    gap, rounding = fuzz_variants.float32_gap_and_rounding(alone, together, alone64, together64, row_mask)
    assert gap <= rounding, (gap, rounding)
    assert fuzz_variants.prop_batch_invariance(spec, head, fields, shape) is None


@DRAWS_OUTSIDE_HYPOTHESIS
def test_rounding_never_excuses_a_real_difference():
    """Two calls on different tokens: float64 disagrees as much as float32, so the check fails."""
    import torch

    name, head, fields, shape, _ = BERT_NSP_CASE
    spec = spec_named(name)
    model, _ = fuzz_variants.build(spec, head, fields)
    inputs = fuzz_variants.make_inputs(spec, head, model, shape)
    other = dict(inputs, input_ids=(inputs["input_ids"] + 1) % model.config.vocab_size)
    with torch.no_grad():
        outputs = (fuzz_variants.output_tensors(model(**other)), fuzz_variants.output_tensors(model(**inputs)))
    same = fuzz_variants.Comparison("logits", other, inputs, lambda out: out, lambda out: out, None)
    with pytest.raises(AssertionError, match=r"logits \(float64\): max abs diff"):
        fuzz_variants.assert_agree_up_to_rounding(model, same, outputs)
