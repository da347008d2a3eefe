"""Numerical parity with transformers' ViT, both conversion directions (fp32, max abs diff <= 1e-5),
eager and sdpa, at the training image size and at other sizes with interpolate_pos_encoding."""

import pytest
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import hf_variants
from tests.common.parity import ATOL, grads_as_model

HEADS = ["Model", "ForImageClassification", "ForMaskedImageModeling"]
TINY_VIT = dict(
    image_size=32,
    patch_size=8,
    num_channels=3,
    encoder_stride=8,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    num_labels=3,
)


def reference(head: str, impl: str, **overrides) -> transformers.PreTrainedModel:
    """A transformers ViT with random weights everywhere (LayerNorms and the mask token included,
    so a wrong mapping of any tensor shows)."""
    config = transformers.ViTConfig(**{**TINY_VIT, **overrides})
    config._attn_implementation = impl
    torch.manual_seed(0)
    model = getattr(transformers, f"ViT{head}")(config).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.1 * torch.randn_like(param))
    return model


def image_inputs(head: str, height: int = 32, width: int = 32, seed: int = 1, masked: bool = True) -> dict:
    g = torch.Generator().manual_seed(seed)
    inputs = {"pixel_values": torch.randn(3, 3, height, width, generator=g)}
    if head == "ForMaskedImageModeling" and masked:
        inputs["bool_masked_pos"] = torch.rand(3, (height // 8) * (width // 8), generator=g) < 0.4
    if head == "ForImageClassification":
        inputs["labels"] = torch.tensor([0, 2, 1])
    return inputs


def assert_same_outputs(expected, got) -> None:
    """Every tensor output of transformers' model, tuples (hidden states, attentions) included."""
    compared = 0
    for key in expected.keys():
        if expected[key] is None:
            continue
        assert got[key] is not None, key
        pairs = (
            zip(expected[key], got[key], strict=True)
            if isinstance(expected[key], tuple)
            else [(expected[key], got[key])]
        )
        for want, have in pairs:
            torch.testing.assert_close(have, want, atol=ATOL, rtol=0, msg=key)
        compared += 1
    assert compared >= 2


def converted_pair(theirs):
    ours = hf_variants.from_transformers(theirs).eval()
    assert ours.config.model_type == "hfv_vit" and type(ours).__module__.startswith("hf_variants")
    back = hf_variants.to_transformers(ours).eval()
    assert type(back) is type(theirs)
    for key, value in theirs.state_dict().items():
        assert torch.equal(value, back.state_dict()[key]), key
    return ours, back


# (height, width, interpolate_pos_encoding): the training size, a larger square, a non-square image
# (not for the SimMIM head: transformers' version assumes a square patch grid).
SIZES = {
    head: [(32, 32, False), (48, 48, True)] + ([] if head == "ForMaskedImageModeling" else [(48, 40, True)])
    for head in HEADS
}


# Both paths of the speed plug-in: the plain PyTorch path, and the padding-free / last-layer-only one
# that runs on CPU by default.
PATHS = {"plain": False, "fast": True}


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head,height,width,interpolate", [(h, *size) for h in HEADS for size in SIZES[h]])
def test_parity_both_directions(head, impl, height, width, interpolate):
    size = (height, width)
    theirs = reference(head, impl)
    ours, back = converted_pair(theirs)
    # transformers' SimMIM loss reshapes the mask to the training grid: masks only at that size.
    inputs = image_inputs(head, *size, masked=not interpolate)
    kwargs = dict(output_hidden_states=True, output_attentions=impl == "eager")
    if interpolate:
        kwargs["interpolate_pos_encoding"] = True
    with torch.no_grad():
        expected = theirs(**inputs, **kwargs)
        assert_same_outputs(expected, ours(**inputs, **kwargs))
        assert_same_outputs(expected, back(**inputs, **kwargs))
        # Without hidden states asked for, both paths of the speed plug-in (config.padding_free,
        # modules/fast_path.py): on the fast one the classifier's last layer computes [CLS] alone.
        plain = dict(inputs, interpolate_pos_encoding=interpolate)
        main = {"Model": "last_hidden_state", "ForImageClassification": "logits"}.get(head, "reconstruction")
        for padding_free in PATHS.values():
            ours.config.padding_free = padding_free
            torch.testing.assert_close(ours(**plain)[main], theirs(**plain)[main], atol=ATOL, rtol=0)


@pytest.mark.parametrize("add_pooling_layer", [True, False])
def test_pooler_option_and_mask_token_carry_over(add_pooling_layer):
    config = transformers.ViTConfig(**TINY_VIT)
    torch.manual_seed(0)
    theirs = transformers.ViTModel(config, add_pooling_layer=add_pooling_layer, use_mask_token=True).eval()
    with torch.no_grad():
        theirs.embeddings.mask_token.normal_()
    ours, _ = converted_pair(theirs)
    assert (ours.pooler is None) == (not add_pooling_layer)
    torch.testing.assert_close(ours.embeddings.mask_token, theirs.embeddings.mask_token, atol=0, rtol=0)
    pixels = image_inputs("Model")["pixel_values"]
    masked = torch.rand(3, 16) < 0.5
    with torch.no_grad():
        expected, got = theirs(pixels, bool_masked_pos=masked), ours(pixels, bool_masked_pos=masked)
        torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state, atol=ATOL, rtol=0)
    if add_pooling_layer:
        torch.testing.assert_close(got.pooler_output, expected.pooler_output, atol=ATOL, rtol=0)
    else:
        assert got.pooler_output is None and expected.pooler_output is None


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", ["Model", "ForImageClassification"])
def test_attention_mask_parity(head, impl, path):
    """transformers' ViT takes an optional (B, 1 + N) attention mask: same outputs at the tokens
    attended to, on both paths (the fast one packs the padded rows)."""
    theirs = reference(head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = PATHS[path]
    pixels = image_inputs("Model")["pixel_values"]
    mask = torch.ones(3, 17, dtype=torch.long)
    mask[1, 10:] = 0
    mask[2, 3:] = 0
    with torch.no_grad():
        expected, got = theirs(pixels, attention_mask=mask), ours(pixels, attention_mask=mask)
    if head == "Model":
        keep = mask.bool()
        torch.testing.assert_close(got.last_hidden_state[keep], expected.last_hidden_state[keep], atol=ATOL, rtol=0)
        torch.testing.assert_close(got.pooler_output, expected.pooler_output, atol=ATOL, rtol=0)
    else:
        torch.testing.assert_close(got.logits, expected.logits, atol=ATOL, rtol=0)


@pytest.mark.parametrize("head", ["ForImageClassification", "ForMaskedImageModeling"])
def test_losses_and_gradients_match_transformers(head):
    theirs = reference(head, "eager")
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = image_inputs(head)
    loss_theirs, loss_ours = theirs(**inputs).loss, ours(**inputs).loss
    torch.testing.assert_close(loss_ours, loss_theirs, atol=ATOL, rtol=0)
    loss_theirs.backward()
    loss_ours.backward()
    grads_ours = hf_variants.to_transformers(grads_as_model(ours)).state_dict()
    for name, p in theirs.named_parameters():
        torch.testing.assert_close(grads_ours[name], p.grad, atol=ATOL, rtol=0, msg=name)


# transformers 5 -> the names of ViT checkpoints on the Hub (google/vit-base-patch16-224, saved by transformers 4).
HUB_FORMAT_RENAMES = [
    ("layers.", "encoder.layer."),
    ("attention.q_proj", "attention.attention.query"),
    ("attention.k_proj", "attention.attention.key"),
    ("attention.v_proj", "attention.attention.value"),
    ("attention.o_proj", "attention.output.dense"),
    ("mlp.fc1", "intermediate.dense"),
    ("mlp.fc2", "output.dense"),
]


def transformers_folder(tmp_path, head: str, hub_format: bool):
    """A folder saved by transformers' ViT<head>; with ``hub_format`` its weights renamed to the
    transformers 4 names the Hub's ViT checkpoints have."""
    theirs = reference(head, "sdpa")
    theirs.save_pretrained(tmp_path)
    if hub_format:
        renamed = {}
        for key, value in load_file(tmp_path / "model.safetensors").items():
            for new, old in HUB_FORMAT_RENAMES:
                key = key.replace(new, old)
            renamed[key] = value
        assert any(".encoder.layer.0.attention.attention.query.weight" in f".{key}" for key in renamed)
        save_file(renamed, tmp_path / "model.safetensors", metadata={"format": "pt"})
    return theirs


@pytest.mark.parametrize("hub_format", [False, True], ids=["transformers5-names", "hub-names"])
@pytest.mark.parametrize("head", HEADS)
def test_from_pretrained_of_a_transformers_folder(tmp_path, head, hub_format):
    """``ViT<head>.from_pretrained(<folder saved by transformers>)`` converts on load (both weight
    formats) and gives transformers' outputs; saving it again writes our format."""
    theirs = transformers_folder(tmp_path / "theirs", head, hub_format)
    ours, info = getattr(hf_variants, f"ViT{head}").from_pretrained(tmp_path / "theirs", output_loading_info=True)
    assert type(ours) is getattr(hf_variants, f"ViT{head}") and ours.config.model_type == "hfv_vit"
    assert not info["missing_keys"] and not info["unexpected_keys"]
    inputs = image_inputs(head)
    inputs.pop("labels", None)
    with torch.no_grad():
        assert_same_outputs(
            theirs(**inputs, output_hidden_states=True), ours.eval()(**inputs, output_hidden_states=True)
        )
    ours.save_pretrained(tmp_path / "ours")
    with safe_open(tmp_path / "ours" / "model.safetensors", "pt") as f:
        assert any(".attention.qkv." in key for key in f.keys()) and not any("q_proj" in key for key in f.keys())


def test_load_pretrained_reads_a_transformers_folder_through_the_auto_class(tmp_path):
    theirs = transformers_folder(tmp_path, "ForImageClassification", hub_format=True)
    ours = hf_variants.load_pretrained(str(tmp_path), transformers.AutoModelForImageClassification).eval()
    assert isinstance(ours, hf_variants.ViTForImageClassification)
    pixels = image_inputs("Model")["pixel_values"]
    with torch.no_grad():
        torch.testing.assert_close(ours(pixels).logits, theirs(pixels).logits, atol=ATOL, rtol=0)


def test_to_transformers_refuses_what_transformers_vit_cannot_express():
    model = hf_variants.ViTModel(hf_variants.ViTConfig(**TINY_VIT, layer_sharing="all"))
    with pytest.raises(ValueError, match="layer_sharing"):
        hf_variants.to_transformers(model)
    for field, value in (("qkv_bias", False), ("pooler_act", "relu"), ("pooler_output_size", 16)):
        theirs = transformers.ViTModel(transformers.ViTConfig(**TINY_VIT, **{field: value}))
        with pytest.raises(ValueError, match=field):
            hf_variants.from_transformers(theirs)
