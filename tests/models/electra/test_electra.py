"""ELECTRA: every head through the shared encoder checks, the config's generator rule, and the joint
generator + discriminator pretraining model (sampling statistics, the label rule, no gradient
through sampling, loss weighting, shared embeddings through save/load and an optimizer step, its
checkpoint in every fine-tuning head, the generator saved alone)."""

from __future__ import annotations

import pytest
import torch
from safetensors import safe_open
from torch.nn import functional as F
from transformers import AutoModelForMaskedLM, AutoModelForPreTraining

import hf_variants
from hf_variants import ElectraConfig, ElectraForPreTraining
from hf_variants.models.electra.modeling_electra import gumbel_max_sample
from tests.common.encoder_tester import (
    ALL_CHECKS,
    TINY,
    EncoderTester,
    check_inputs_without_batch_dim,
    check_returned_states_in_graph,
    check_save_load,
)

SPEC = hf_variants.registry.SPECS["hfv_electra"]
# The RTD model has no entry in the shared tester's tables; it is checked below and in the parity tests.
HEADS = [head for head in SPEC.classes if head != "ForReplacedTokenDetection"]
MASK_ID = 4


class ElectraTester(EncoderTester):
    """The shared tester; the joint model is pretrained without NSP (no next_sentence_label)."""

    def labels(self, head, ids, mask, g):
        labels = super().labels(head, ids, mask, g)
        labels.pop("next_sentence_label", None)
        return labels


TESTER = ElectraTester(
    ElectraConfig, {head: SPEC.classes[head] for head in HEADS}, config_overrides={"embedding_size": 16}
)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    if check is check_returned_states_in_graph and head == "ForPreTraining":
        pytest.skip(
            "the joint model returns the discriminator's states; its main output is the generator's "
            "(test_joint_returned_states_are_in_the_discriminator_graph)"
        )
    check(TESTER, head)


@pytest.mark.parametrize("head", HEADS)
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


def test_replaced_token_detection_refuses_ids_without_a_batch_dim():
    """The shared check on the one head outside the tester's tables (the others run it in
    test_shared_checks): every ELECTRA head answers 1-D input_ids with the same clear ValueError."""
    rtd = ElectraTester(
        ElectraConfig,
        {"ForReplacedTokenDetection": SPEC.classes["ForReplacedTokenDetection"]},
        config_overrides={"embedding_size": 16},
    )
    check_inputs_without_batch_dim(rtd, "ForReplacedTokenDetection")
    with pytest.raises(ValueError, match=r"input_ids must be \(batch, length\), got shape \(10,\)"):
        ElectraForPreTraining(tiny_config())(input_ids=torch.randint(5, 99, (10,)))


def tiny_config(**overrides) -> ElectraConfig:
    fields = {
        **TINY,
        "embedding_size": 16,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "generator_hidden_size": 0.5,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
    }
    return ElectraConfig(**{**fields, **overrides})


def masked_batch(seed: int = 0, length: int = 12) -> dict[str, torch.Tensor]:
    """What the RTD collator produces: padded rows, ~30% of the real tokens selected, most of
    those [MASK], labels = the original ids there."""
    g = torch.Generator().manual_seed(seed)
    original = torch.randint(5, TINY["vocab_size"], (3, length), generator=g)
    mask = torch.ones_like(original)
    mask[1, length - 3 :] = 0
    mask[2, length // 2 :] = 0
    original = original.masked_fill(mask == 0, 0)
    selected = (torch.rand(original.shape, generator=g) < 0.3) & mask.bool()
    selected[:, 1] = True
    to_mask = selected & (torch.rand(original.shape, generator=g) < 0.85)
    return {
        "input_ids": original.masked_fill(to_mask, MASK_ID),
        "attention_mask": mask,
        "labels": original.masked_fill(~selected, -100),
    }


# ----------------------------------------------------------------------------- config
def test_generator_follows_the_original_rule():
    config = ElectraConfig()  # ELECTRA-Base defaults with the 1/4 generator
    assert (config.hidden_size, config.embedding_size, config.discriminator_weight) == (768, 768, 50.0)
    generator = config.generator_config()
    assert (generator.hidden_size, generator.intermediate_size, generator.num_attention_heads) == (192, 768, 3)
    assert (generator.num_hidden_layers, generator.embedding_size) == (12, 768)
    small = ElectraConfig(hidden_size=256, embedding_size=128, num_attention_heads=4, intermediate_size=1024)
    assert small.generator_config().hidden_size == 64 and small.generator_config().num_attention_heads == 1
    for embedding_size in (64, None):  # E = H, given or by default
        model = ElectraForPreTraining(tiny_config(embedding_size=embedding_size))
        assert model.electra.embeddings.projection is None  # the discriminator needs no projection
        assert model.generator.embeddings.projection.weight.shape == (32, 64)  # the generator projects E -> its H
        assert model.generator_mlm_head.decoder.weight.shape == (TINY["vocab_size"], 64)
        assert model(**masked_batch()).loss is not None


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(generator_hidden_size=0.0), "generator_hidden_size"),
        (dict(generator_layers=1.5), "generator_layers"),
        (dict(discriminator_weight=-1.0), "discriminator_weight"),
        (dict(sampling_temperature=0.0), "sampling_temperature"),
        (
            dict(hidden_size=258, num_attention_heads=2, generator_hidden_size=0.5),
            "129 .* not divisible by its 2 heads",
        ),
        (dict(generator_hidden_size=0.005), "generator would have hidden size 0"),
    ],
)
def test_invalid_configs_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        ElectraForPreTraining(tiny_config(**overrides))


def test_auto_model_for_pretraining_builds_the_joint_model():
    model = AutoModelForPreTraining.from_config(tiny_config())
    assert type(model) is ElectraForPreTraining
    assert isinstance(model.generator, hf_variants.ElectraModel) and model.generator.config.hidden_size == 32


# ----------------------------------------------------------------------------- RTD model
def test_replaced_token_detection_loss_is_bce_over_real_tokens():
    model = hf_variants.ElectraForReplacedTokenDetection(tiny_config()).eval()
    batch = masked_batch()
    labels = torch.randint(0, 2, batch["input_ids"].shape)
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels)
    real = batch["attention_mask"].bool()
    assert out.logits.shape == labels.shape
    torch.testing.assert_close(out.loss, F.binary_cross_entropy_with_logits(out.logits[real], labels[real].float()))
    with pytest.raises(ValueError, match="0 \\(original\\), 1 \\(replaced\\)"):
        model(input_ids=batch["input_ids"], labels=labels + 1)


# ----------------------------------------------------------------------------- joint model
@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_gumbel_max_samples_follow_the_softmax(temperature):
    torch.manual_seed(1)
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, 0.5])
    draws = 40_000
    samples = gumbel_max_sample(logits.expand(draws, -1).clone().requires_grad_(), temperature)
    assert not samples.requires_grad
    frequencies = torch.bincount(samples, minlength=5).float() / draws
    expected = torch.softmax(logits / temperature, dim=-1)
    # Binomial standard error <= 0.0025 per class: 5 sigma.
    torch.testing.assert_close(frequencies, expected, atol=0.0125, rtol=0)


def test_generator_samples_follow_its_own_softmax():
    """Inside the model: the replacement drawn at a masked position is distributed as the
    generator's softmax there (here made peaked on few tokens through the decoder bias)."""
    torch.manual_seed(2)
    model = ElectraForPreTraining(tiny_config()).eval()
    with torch.no_grad():
        model.generator_mlm_head.decoder.bias[:] = -30.0
        model.generator_mlm_head.decoder.bias[[10, 20, 30]] = torch.tensor([2.0, 1.0, 0.0])
    batch = masked_batch()
    batch = {k: v.repeat(200, 1) for k, v in batch.items()}
    out = model(**batch)
    selected = batch["labels"] != -100
    sampled = out.corrupted_input_ids[selected]
    probabilities = torch.softmax(out.prediction_logits, dim=-1)  # (num_masked, V), row-major like `sampled`
    frequencies = torch.stack([(sampled == token).float().mean() for token in (10, 20, 30)])
    torch.testing.assert_close(frequencies, probabilities[:, [10, 20, 30]].mean(0), atol=0.02, rtol=0)


def test_label_rule_a_correct_guess_counts_as_original():
    model = ElectraForPreTraining(tiny_config()).eval()
    guess = 42
    with torch.no_grad():  # the generator always samples `guess`
        model.generator_mlm_head.decoder.bias[:] = -1e4
        model.generator_mlm_head.decoder.bias[guess] = 1e4
    batch = masked_batch()
    batch["labels"][0, 3] = guess  # a masked position whose original is the generator's guess
    batch["input_ids"][0, 3] = MASK_ID
    out = model(**batch)
    selected = batch["labels"] != -100
    original = torch.where(selected, batch["labels"], batch["input_ids"])
    assert (out.corrupted_input_ids[selected] == guess).all()
    assert torch.equal(out.corrupted_input_ids[~selected], original[~selected])  # [MASK]s are gone, the rest kept
    assert torch.equal(out.discriminator_labels, (selected & (original != guess)).long())
    assert out.discriminator_labels[0, 3] == 0 and out.discriminator_labels.sum() == selected.sum() - 1
    # The discriminator saw the corrupted ids: same logits as the RTD model fed them directly.
    detector = hf_variants.ElectraForReplacedTokenDetection(model.config).eval()
    detector.load_state_dict(model.state_dict(), strict=False)
    expected = detector(input_ids=out.corrupted_input_ids, attention_mask=batch["attention_mask"]).logits
    torch.testing.assert_close(out.logits, expected, atol=1e-6, rtol=0)


def test_generator_logits_are_sparse_and_equal_the_dense_ones():
    model = ElectraForPreTraining(tiny_config()).eval()
    batch = masked_batch()
    selected = batch["labels"] != -100
    sparse = model(**batch).prediction_logits
    dense = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).prediction_logits
    assert sparse.shape == (int(selected.sum()), TINY["vocab_size"])
    torch.testing.assert_close(sparse, dense[selected], atol=1e-5, rtol=0)


@pytest.mark.parametrize("generator_weight, discriminator_weight", [(1.0, 50.0), (0.5, 7.0)])
def test_loss_is_the_weighted_sum_of_both_reported_losses(generator_weight, discriminator_weight):
    model = ElectraForPreTraining(
        tiny_config(generator_weight=generator_weight, discriminator_weight=discriminator_weight)
    )
    batch = masked_batch()
    out = model.eval()(**batch)
    selected = batch["labels"] != -100
    real = batch["attention_mask"].bool()
    mlm = F.cross_entropy(out.prediction_logits, batch["labels"][selected])
    rtd = F.binary_cross_entropy_with_logits(out.logits[real], out.discriminator_labels[real].float())
    torch.testing.assert_close(out.mlm_loss, mlm)
    torch.testing.assert_close(out.discriminator_loss, rtd)
    torch.testing.assert_close(out.loss, generator_weight * mlm + discriminator_weight * rtd)


def test_no_gradient_reaches_the_generator_through_its_samples():
    model = ElectraForPreTraining(tiny_config()).train()
    model(**masked_batch()).discriminator_loss.backward()
    generator_only = [
        (n, p) for n, p in model.named_parameters() if n.startswith(("generator.", "generator_mlm_head."))
    ]
    assert generator_only and all(p.grad is None for _, p in generator_only)
    shared = model.electra.embeddings.word_embeddings.weight
    assert shared.grad is not None and shared.grad.abs().sum() > 0  # through the discriminator's lookup
    model.zero_grad()
    model(**masked_batch()).mlm_loss.backward()
    assert all(p.grad is not None for _, p in generator_only)
    assert model.discriminator_predictions.dense.weight.grad is None


def test_nothing_masked_means_nothing_replaced():
    model = ElectraForPreTraining(tiny_config()).train()
    batch = masked_batch()
    batch["labels"][:] = -100
    out = model(**batch)
    assert out.mlm_loss == 0 and out.discriminator_labels.sum() == 0
    assert torch.equal(out.corrupted_input_ids, batch["input_ids"])
    out.loss.backward()
    assert all(p.grad is not None for p in model.parameters())  # data-parallel training needs every gradient


def test_joint_returned_states_are_in_the_discriminator_graph():
    model = ElectraForPreTraining(tiny_config(padding_free=True)).eval()
    model.config._attn_implementation = "eager"
    batch = masked_batch()
    out = model(**batch, output_hidden_states=True, output_attentions=True)
    returned = [*out.hidden_states, *out.attentions]
    assert len(out.hidden_states) == TINY["num_hidden_layers"] + 1
    for tensor in returned:
        tensor.retain_grad()
    out.logits.pow(2).sum().backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in returned)


def assert_embeddings_shared(model: ElectraForPreTraining) -> None:
    electra, generator = model.electra.embeddings, model.generator.embeddings
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        assert getattr(generator, name).weight is getattr(electra, name).weight, name
    assert (
        generator.layer_norm.weight is electra.layer_norm.weight
        and generator.layer_norm.bias is electra.layer_norm.bias
    )
    assert model.generator_mlm_head.decoder.weight is electra.word_embeddings.weight
    assert generator.projection is not electra.projection  # each keeps its own E -> H projection


def test_shared_embeddings_stay_one_tensor_through_save_load_and_an_optimizer_step(tmp_path):
    model = ElectraForPreTraining(tiny_config()).train()
    assert_embeddings_shared(model)
    parameters = list(model.parameters())
    assert sum(p is model.electra.embeddings.word_embeddings.weight for p in parameters) == 1
    optimizer = torch.optim.AdamW(parameters, lr=1e-2)
    before = model.electra.embeddings.word_embeddings.weight.detach().clone()
    model(**masked_batch()).loss.backward()
    optimizer.step()
    assert_embeddings_shared(model)
    assert not torch.equal(before, model.generator.embeddings.word_embeddings.weight)
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as stored:
        keys = set(stored.keys())
    assert "electra.embeddings.word_embeddings.weight" in keys
    assert not any(
        k.startswith(
            (
                "generator.embeddings.word",
                "generator.embeddings.position",
                "generator.embeddings.token",
                "generator.embeddings.layer_norm",
                "generator_mlm_head.decoder.weight",
            )
        )
        for k in keys
    )
    assert "generator.embeddings.projection.weight" in keys
    reloaded = AutoModelForPreTraining.from_pretrained(tmp_path)
    assert type(reloaded) is ElectraForPreTraining
    assert_embeddings_shared(reloaded)
    for key, value in model.state_dict().items():
        assert torch.equal(value, reloaded.state_dict()[key]), key
    reloaded.train()
    optimizer = torch.optim.AdamW(reloaded.parameters(), lr=1e-2)
    reloaded(**masked_batch()).loss.backward()
    optimizer.step()
    assert_embeddings_shared(reloaded)


FINE_TUNING_HEADS = [
    "Model",
    "ForReplacedTokenDetection",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
]


def test_joint_checkpoint_loads_into_every_fine_tuning_head(tmp_path):
    joint = ElectraForPreTraining(tiny_config()).eval()
    joint.save_pretrained(tmp_path)
    batch = masked_batch()
    for head in FINE_TUNING_HEADS:
        model, info = SPEC.classes[head].from_pretrained(tmp_path, output_loading_info=True)
        discriminator = model.electra if head != "Model" else model
        for key, value in joint.electra.state_dict().items():
            assert torch.equal(discriminator.state_dict()[key], value), (head, key)
        assert not any(k.startswith(("electra.", "embeddings.", "encoder.")) for k in info["missing_keys"]), head
    detector = hf_variants.ElectraForReplacedTokenDetection.from_pretrained(tmp_path).eval()
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    torch.testing.assert_close(detector(**inputs).logits, joint(**inputs).logits, atol=1e-6, rtol=0)


def test_the_generator_saves_alone_as_a_masked_lm(tmp_path):
    joint = ElectraForPreTraining(tiny_config()).eval()
    generator = joint.generator_as_masked_lm()
    assert type(generator) is hf_variants.ElectraForMaskedLM
    assert generator.electra is joint.generator and generator.mlm_head is joint.generator_mlm_head  # no copy
    generator.save_pretrained(tmp_path)
    reloaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    assert type(reloaded) is hf_variants.ElectraForMaskedLM and reloaded.config.hidden_size == 32
    inputs = {k: v for k, v in masked_batch().items() if k != "labels"}
    torch.testing.assert_close(reloaded(**inputs).logits, joint(**inputs).prediction_logits, atol=1e-6, rtol=0)
    theirs = hf_variants.to_transformers(reloaded)  # and it is a transformers ElectraForMaskedLM too
    assert type(theirs).__name__ == "ElectraForMaskedLM"


def test_bad_inputs_name_the_problem():
    model = ElectraForPreTraining(tiny_config()).eval()
    batch = masked_batch()
    with pytest.raises(ValueError, match="next_sentence_label"):
        model(**batch, next_sentence_label=torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="input_ids"):
        model(inputs_embeds=torch.zeros(3, 12, 16), labels=batch["labels"])
    with pytest.raises(ValueError, match="labels has shape"):
        model(input_ids=batch["input_ids"], labels=batch["labels"][:, :5])
    with pytest.raises(ValueError, match="outside"):
        model(input_ids=batch["input_ids"], labels=batch["labels"].masked_fill(batch["labels"] != -100, 500))


# ----------------------------------------------------------------------------- named configs
def discriminator_parameters(name: str) -> int:
    """The discriminator as pretrained (encoder + RTD head), the network the paper's sizes describe
    (the generator is discarded after pretraining)."""
    with torch.device("meta"):
        model = hf_variants.ElectraForReplacedTokenDetection(hf_variants.named_config(name))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name, paper_millions", [("electra-small", 14), ("electra-base", 110), ("electra-large", 335)])
def test_parameter_counts_match_the_paper(name, paper_millions):
    """Within 3% of the paper's table (whole millions), except Small: its discriminator has 13.55M,
    3.2% under the paper's "14M" (13.55 rounded up; the released electra-small-discriminator has the
    same 13.5M), so Small gets 3.5%. Base 109.5M (-0.5%), Large 335.1M (+0.04%)."""
    count = discriminator_parameters(name)
    tolerance = 0.035 if name == "electra-small" else 0.03
    assert abs(count - paper_millions * 1e6) / (paper_millions * 1e6) < tolerance


@pytest.mark.parametrize(
    "name, layers, hidden, embedding, generator_hidden, mlm_probability",
    [
        ("electra-mini", 4, 256, 128, 64, 0.15),
        ("electra-small", 12, 256, 128, 64, 0.15),
        ("electra-base", 12, 768, 768, 256, 0.15),
        ("electra-large", 24, 1024, 1024, 256, 0.25),
    ],
)
def test_named_configs(name, layers, hidden, embedding, generator_hidden, mlm_probability):
    config = hf_variants.named_config(name)
    assert type(config) is ElectraConfig
    assert (config.num_hidden_layers, config.hidden_size, config.embedding_size) == (layers, hidden, embedding)
    assert config.intermediate_size == 4 * hidden and config.hidden_size // config.num_attention_heads == 64
    generator = config.generator_config()
    assert (generator.hidden_size, generator.num_attention_heads, generator.intermediate_size) == (
        generator_hidden,
        generator_hidden // 64,
        4 * generator_hidden,
    )
    assert config.mlm_probability == mlm_probability
