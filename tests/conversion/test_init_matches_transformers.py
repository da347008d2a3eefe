"""A freshly built model starts from the reference's initial weight distribution, for every head
transformers has: the same mean and spread, tensor by tensor, after the key map (a model trained
from scratch trains as the reference's does only if it starts where the reference starts).

Found by it: transformers' custom-code init path skipped every module without parameters of its
own, so T5's unit-variance embeddings and fan-in projections were silently N(0, 0.02)."""

from __future__ import annotations

import pytest
import torch
import transformers

import hf_variants  # noqa: F401  (registers the variants and their conversion pairs)
from hf_variants.conversion import PAIRS, to_transformers
from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config

# Larger than the tiny fixtures, so each tensor's spread is estimated to a few percent.
SIZES = dict(
    vocab_size=400, hidden_size=64, intermediate_size=128, num_attention_heads=2, head_dim=32, embedding_size=32
)
# What the transformers reference needs of a config beyond the sizes, where our class is more
# general than it: (variant, the reference's model_type) -> our config fields. Special ids come
# inside the vocabulary from every variant's tiny config.
REFERENCE_CONFIG_OVERRIDES: dict[tuple[str, str], dict[str, object]] = {
    # transformers' OpenAI GPT (GPT-1): post-LN, FFN 4x hidden (256 = 4 x SIZES' 64), no scaled
    # residual init. GPT-2 is our default.
    ("gpt", "openai-gpt"): {"pre_layer_norm": False, "scale_residual_init": False, "intermediate_size": 256},
    # Marian (the transformers reference) concatenates sin|cos; the paper interleaves them.
    ("transformer", "marian"): {"sinusoidal_layout": "concatenated"},
    # transformers' XLM fixes the FFN at 4x hidden (ours takes any width); 256 = 4 x SIZES' 64.
    ("xlm", "xlm"): {"intermediate_size": 256},
}
MIN_ELEMENTS = 2000  # smaller tensors: only checked when constant (norm weights, biases)


def spec_of(our_class: type):
    return next((spec for spec in SPECS.values() if our_class in spec.classes.values()), None)


def pair_cases():
    seen, cases = set(), []
    for pair in PAIRS:
        spec = spec_of(pair.ours)
        if spec is not None and (pair.ours, pair.theirs) not in seen:
            seen.add((pair.ours, pair.theirs))
            cases.append(pytest.param(spec, pair, id=f"{pair.ours.__name__}-{pair.theirs.__name__}"))
    return cases


@pytest.mark.parametrize("spec, pair", pair_cases())
def test_initial_weights_match_the_reference_distribution(spec, pair):
    defaults = tiny_config(spec)
    sizes = {key: value for key, value in SIZES.items() if getattr(defaults, key, None) is not None}
    reference_needs = REFERENCE_CONFIG_OVERRIDES.get((spec.name, pair.theirs.config_class.model_type), {})
    config = tiny_config(spec, **{**sizes, **reference_needs})
    torch.manual_seed(0)
    ours = to_transformers(pair.ours(config), pair.theirs)
    torch.manual_seed(1)
    assert_same_initial_distribution(ours, pair.theirs(ours.config))


@pytest.mark.parametrize("variant, reference", sorted(REFERENCE_CONFIG_OVERRIDES))
def test_reference_config_overrides_name_a_reference_and_real_fields(variant, reference):
    """Each override names a registered variant and the model_type of one of its transformers pairs,
    and sets fields its config has (a typo would otherwise be silently ignored by the test above)."""
    spec = SPECS[f"hfv_{variant}"]
    references = {pair.theirs.config_class.model_type for pair in PAIRS if spec_of(pair.ours) is spec}
    assert reference in references, f"{reference!r} is not a transformers pair of {variant}: {sorted(references)}"
    fields = REFERENCE_CONFIG_OVERRIDES[variant, reference]
    defaults = tiny_config(spec)
    assert fields and all(hasattr(defaults, key) for key in fields), fields


def assert_same_initial_distribution(ours, theirs, skip: tuple[str, ...] = ()) -> None:
    """Tensor by tensor (transformers' names on both sides): constants equal, larger tensors with
    the same spread (15%) and mean; names in ``skip`` are left to the caller."""
    their_tensors = dict(theirs.state_dict())
    compared = 0
    for name, ours_tensor in ours.state_dict().items():
        reference = their_tensors.get(name)
        if (
            name in skip
            or reference is None
            or not reference.is_floating_point()
            or reference.shape != ours_tensor.shape
        ):
            continue
        reference, ours_tensor = reference.double(), ours_tensor.double()
        if reference.numel() == 1 or reference.std() == 0:  # constant: ones, zeros, fixed tables
            assert torch.allclose(ours_tensor, reference), name
        elif reference.numel() >= MIN_ELEMENTS and not name.endswith(("position_ids", "inv_freq")):
            spread = reference.std().item()
            assert ours_tensor.std().item() == pytest.approx(spread, rel=0.15), (
                f"{name}: std {ours_tensor.std():.4g} vs {spread:.4g}"
            )
            assert abs(ours_tensor.mean().item() - reference.mean().item()) < 0.15 * spread, name
        else:
            continue
        compared += 1
    assert compared >= 3, f"only {compared} tensors compared"


# ----------------------------------------------------------------------------- pretraining models without a pair
# Pretraining models with no transformers class of their own, compared part by part with the
# transformers classes their parts convert to. Not covered: SpanBERT's SBO head, ViT's MAE decoder
# (no transformers counterpart with a key map here) and Transformer-XL (removed from transformers).
def test_electra_joint_model_starts_as_transformers_discriminator_and_generator():
    """The joint model's discriminator half starts as transformers' ElectraForPreTraining, except
    the RTD logit bias, which starts at the prior log-odds (docs/electra_rootcause.md); its
    generator half (with the shared embedding tables) as transformers' ElectraForMaskedLM."""
    import math

    from hf_variants import ElectraForPreTraining, ElectraForReplacedTokenDetection

    spec = spec_of(ElectraForPreTraining)
    defaults = tiny_config(spec)
    sizes = {key: value for key, value in SIZES.items() if getattr(defaults, key, None) is not None}
    # A discriminator 256 wide, so the generator (1/4) is 64 wide with one head and big enough to compare.
    config = tiny_config(spec, **{**sizes, "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4})
    torch.manual_seed(0)
    joint = ElectraForPreTraining(config)
    discriminator = ElectraForReplacedTokenDetection(config)
    missing, unexpected = discriminator.load_state_dict(joint.state_dict(), strict=False)
    assert not missing and all(key.startswith("generator") for key in unexpected)
    ours = to_transformers(discriminator, transformers.ElectraForPreTraining)
    torch.manual_seed(1)
    theirs = transformers.ElectraForPreTraining(ours.config)
    bias = "discriminator_predictions.dense_prediction.bias"
    assert_same_initial_distribution(ours, theirs, skip=(bias,))
    p = config.mlm_probability
    assert ours.state_dict()[bias].item() == pytest.approx(math.log(p / (1 - p)))
    assert theirs.state_dict()[bias].item() == 0.0

    generator = to_transformers(joint.generator_as_masked_lm(), transformers.ElectraForMaskedLM)
    torch.manual_seed(2)
    assert_same_initial_distribution(generator, transformers.ElectraForMaskedLM(generator.config))


def test_spanbert_pretraining_model_starts_as_transformers_masked_lm():
    """SpanBERT's encoder and MLM head start as transformers' BertForMaskedLM (its SBO head has no
    transformers counterpart)."""
    from hf_variants.models.spanbert.modeling_spanbert import SpanBertForMaskedLM, SpanBertForPreTraining

    spec = spec_of(SpanBertForPreTraining)
    defaults = tiny_config(spec)
    config = tiny_config(
        spec, **{key: value for key, value in SIZES.items() if getattr(defaults, key, None) is not None}
    )
    torch.manual_seed(0)
    pretraining = SpanBertForPreTraining(config)
    masked_lm = SpanBertForMaskedLM(config)
    missing, unexpected = masked_lm.load_state_dict(pretraining.state_dict(), strict=False)
    assert not missing and unexpected and all(key.startswith("sbo_head") for key in unexpected)
    ours = to_transformers(masked_lm, transformers.BertForMaskedLM)
    torch.manual_seed(1)
    assert_same_initial_distribution(ours, transformers.BertForMaskedLM(ours.config))
