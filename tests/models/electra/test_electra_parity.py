"""Numerical parity with transformers' ELECTRA, both conversion directions (fp32, max abs diff <= 1e-5):
ElectraModel, ElectraForPreTraining (our ElectraForReplacedTokenDetection), ElectraForMaskedLM and
the task heads; factorized (E < H) and plain (E = H) embeddings; eager and sdpa; no, right and
left padding; losses and gradients; checkpoints saved by transformers."""

import pytest
import torch
import transformers
from torch.nn import functional as F

import hf_variants
from hf_variants.models.electra.modeling_electra import gumbel_max_sample
from tests.common.encoder_tester import TINY
from tests.common.inputs import make_inputs
from tests.common.parity import ATOL, assert_same_outputs, at_real_tokens, grads_as_model

FACTORIZED = {**TINY, "embedding_size": 16}  # E = 16 < H = 32: the E -> H projection exists
# Our class name suffix -> transformers' class.
THEIRS = {
    "Model": "ElectraModel",
    "ForReplacedTokenDetection": "ElectraForPreTraining",
    "ForMaskedLM": "ElectraForMaskedLM",
    "ForSequenceClassification": "ElectraForSequenceClassification",
    "ForTokenClassification": "ElectraForTokenClassification",
    "ForQuestionAnswering": "ElectraForQuestionAnswering",
    "ForMultipleChoice": "ElectraForMultipleChoice",
}


def reference(head: str, impl: str, **overrides) -> transformers.PreTrainedModel:
    fields = {**FACTORIZED, "num_labels": 2 if head == "ForQuestionAnswering" else 3, **overrides}
    config = transformers.ElectraConfig(**fields)
    config._attn_implementation = impl
    torch.manual_seed(0)
    return getattr(transformers, THEIRS[head])(config).eval()


def electra_inputs(head: str, padding: str) -> dict:
    return make_inputs(TINY["vocab_size"], padding, segments=True, choices=2 if head == "ForMultipleChoice" else None)


# Both paths of the speed plug-in (config.padding_free, hf_variants/modules/fast_path.py): the plain
# PyTorch path, and the padding-free / last-layer-only path that runs on CPU by default.
PATHS = {"plain": False, "fast": True}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("padding", ["right", "left"])  # row 0 of each batch is unpadded
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", list(THEIRS))
def test_parity_both_directions(head, impl, padding, path):
    theirs = reference(head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    assert type(ours) is getattr(hf_variants, f"Electra{head}") and ours.config.model_type == "hfv_electra"
    if head != "Model":
        assert ours.electra.embeddings.projection is not None  # transformers' electra.embeddings_project
    ours.config.padding_free = PATHS[path]
    back = hf_variants.to_transformers(ours).eval()
    assert type(back) is type(theirs)
    for key, value in theirs.state_dict().items():
        assert torch.equal(value, back.state_dict()[key]), key
    inputs = electra_inputs(head, padding)
    # Every layer's states are the plain path's to return (the fast path steps aside for them):
    # the fast path is compared on the heads' outputs.
    every_layer = {"output_hidden_states": True} if path == "plain" else {}
    with torch.no_grad():
        expected = theirs(**inputs, **every_layer)
        assert_same_outputs(expected, ours(**inputs, **every_layer), inputs["attention_mask"], at_least=1)
        assert_same_outputs(expected, back(**inputs, **every_layer), inputs["attention_mask"], at_least=1)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("head", ["Model", "ForMaskedLM", "ForSequenceClassification"])
def test_parity_without_projection(head, path):
    """E = H (ELECTRA-Base/Large): neither side has a projection."""
    theirs = reference(head, "sdpa", embedding_size=TINY["hidden_size"])
    assert not hasattr(theirs.base_model, "embeddings_project")
    ours = hf_variants.from_transformers(theirs).eval()
    assert ours.base_model.embeddings.projection is None
    ours.config.padding_free = PATHS[path]
    inputs = electra_inputs(head, "right")
    every_layer = {"output_hidden_states": True} if path == "plain" else {}
    with torch.no_grad():
        assert_same_outputs(
            theirs(**inputs, **every_layer), ours(**inputs, **every_layer), inputs["attention_mask"], at_least=1
        )


def labels_for(head: str, inputs: dict) -> dict:
    g = torch.Generator().manual_seed(2)
    ids = inputs["input_ids"]
    if head == "ForMaskedLM":
        return {"labels": ids.masked_fill(torch.rand(ids.shape, generator=g) > 0.4, -100)}
    if head == "ForReplacedTokenDetection":
        return {"labels": torch.randint(0, 2, ids.shape, generator=g)}
    if head == "ForTokenClassification":
        return {"labels": torch.randint(0, 3, ids.shape, generator=g).masked_fill(inputs["attention_mask"] == 0, -100)}
    if head == "ForQuestionAnswering":
        return {"start_positions": torch.tensor([1, 2, 0]), "end_positions": torch.tensor([3, 5, 1])}
    if head == "ForMultipleChoice":
        return {"labels": torch.tensor([0, 1, 1])}
    return {"labels": torch.tensor([0, 2, 1])}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("head", [h for h in THEIRS if h != "Model"])
def test_losses_and_gradients_match_transformers(head, path):
    theirs = reference(head, "eager")
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = PATHS[path]
    inputs = electra_inputs(head, "right")
    labels = labels_for(head, inputs)
    loss_theirs = theirs(**inputs, **labels).loss
    loss_ours = ours(**inputs, **labels).loss
    torch.testing.assert_close(loss_ours, loss_theirs, atol=ATOL, rtol=0)
    loss_theirs.backward()
    loss_ours.backward()
    grads_ours = hf_variants.to_transformers(grads_as_model(ours)).state_dict()
    for name, p in theirs.named_parameters():
        torch.testing.assert_close(grads_ours[name], p.grad, atol=ATOL, rtol=0, msg=name)


@pytest.mark.parametrize("head", list(THEIRS))
def test_from_pretrained_of_a_folder_saved_by_transformers(head, tmp_path):
    """``OurClass.from_pretrained(<folder written by transformers' class>)`` (what the Hub's
    google/electra-* repositories hold) converts on load: identical outputs, no weight left out."""
    theirs = reference(head, "sdpa")
    theirs.save_pretrained(tmp_path)
    ours, info = getattr(hf_variants, f"Electra{head}").from_pretrained(tmp_path, output_loading_info=True)
    assert ours.config.model_type == "hfv_electra"
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    inputs = electra_inputs(head, "left")
    with torch.no_grad():
        assert_same_outputs(
            theirs(**inputs, output_hidden_states=True),
            ours.eval()(**inputs, output_hidden_states=True),
            inputs["attention_mask"],
        )


def test_a_released_discriminator_checkpoint_starts_the_joint_model(tmp_path):
    """transformers' ElectraForPreTraining folder through AutoModelForPreTraining (load_pretrained):
    our joint model with that discriminator and a newly initialised generator."""
    theirs = reference("ForReplacedTokenDetection", "sdpa")
    theirs.save_pretrained(tmp_path)
    joint = hf_variants.load_pretrained(str(tmp_path), transformers.AutoModelForPreTraining).eval()
    assert type(joint) is hf_variants.ElectraForPreTraining
    inputs = electra_inputs("Model", "right")
    with torch.no_grad():
        torch.testing.assert_close(
            joint(**inputs).logits[inputs["attention_mask"].bool()],
            theirs(**inputs).logits[inputs["attention_mask"].bool()],
            atol=ATOL,
            rtol=0,
        )


def test_conversion_refuses_what_transformers_cannot_express():
    with pytest.raises(ValueError, match="gelu"):
        hf_variants.from_transformers(reference("ForMaskedLM", "sdpa", hidden_act="relu"))
    with pytest.raises(ValueError, match="summary_type"):
        hf_variants.from_transformers(reference("ForMultipleChoice", "sdpa", summary_type="mean"))
    ours = hf_variants.ElectraModel(hf_variants.ElectraConfig(**{**FACTORIZED, "pre_layer_norm": True}))
    with pytest.raises(ValueError, match="pre_layer_norm"):
        hf_variants.to_transformers(ours)
    joint = hf_variants.ElectraForPreTraining(hf_variants.ElectraConfig(**FACTORIZED))
    with pytest.raises(ValueError, match="no transformers equivalent"):
        hf_variants.to_transformers(joint)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("padding", ["right", "left"])
def test_joint_model_computes_transformers_generator_then_discriminator(padding, path):
    """The joint objective against transformers' two classes, converted from its halves: the
    generator (transformers' ElectraForMaskedLM) at the masked positions, a replacement sampled from
    its softmax with the same Gumbel noise (same seed, same (num_masked, V) draw), the discriminator
    (transformers' ElectraForPreTraining) on the corrupted ids; loss = MLM + 50 x RTD. Both paths."""
    torch.manual_seed(0)
    joint = hf_variants.ElectraForPreTraining(hf_variants.ElectraConfig(**FACTORIZED)).eval()
    joint.config.padding_free = PATHS[path]
    generator = hf_variants.to_transformers(joint.generator_as_masked_lm()).eval()
    detector = hf_variants.ElectraForReplacedTokenDetection(joint.config)
    detector.load_state_dict(joint.state_dict(), strict=False)
    discriminator = hf_variants.to_transformers(detector).eval()
    inputs = electra_inputs("Model", padding)
    mask = inputs["attention_mask"]
    selected = (torch.rand(mask.shape, generator=torch.Generator().manual_seed(3)) < 0.3) & mask.bool()
    selected[torch.arange(mask.shape[0]), mask.argmax(dim=1)] = True  # at least one per row: its first real token
    labels = inputs["input_ids"].masked_fill(~selected, -100)
    masked = {**inputs, "input_ids": inputs["input_ids"].masked_fill(selected, 4)}
    with torch.no_grad():
        torch.manual_seed(2)
        ours = joint(**masked, labels=labels)
        generator_logits = generator(**masked).logits[selected]  # (num_masked, V), row-major
        torch.manual_seed(2)  # the same noise for transformers' side
        samples = gumbel_max_sample(generator_logits, joint.config.sampling_temperature)
        corrupted = inputs["input_ids"].clone()
        corrupted[selected] = samples
        replaced = (corrupted != inputs["input_ids"]).float()
        rtd_logits = discriminator(**{**inputs, "input_ids": corrupted}).logits
    real = mask.bool()
    mlm = F.cross_entropy(generator_logits, labels[selected])
    rtd = F.binary_cross_entropy_with_logits(rtd_logits[real], replaced[real])
    assert joint.generator.config.padding_free is PATHS[path]  # the switch reaches the generator
    assert torch.equal(ours.corrupted_input_ids, corrupted) and torch.equal(ours.discriminator_labels, replaced.long())
    torch.testing.assert_close(ours.prediction_logits, generator_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(at_real_tokens(ours.logits, mask), at_real_tokens(rtd_logits, mask), atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.mlm_loss, mlm, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.discriminator_loss, rtd, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.loss, mlm + 50.0 * rtd, atol=1e-4, rtol=0)
