"""Regression found by transformers' own common tests (issue 31): a ViT checkpoint without the
SimMIM mask token loads into a model built with ``use_mask_token=True`` (the token initialised and
reported missing, as transformers does); any other missing weight is still refused."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from hf_variants import ViTConfig, ViTForMaskedImageModeling, ViTModel

TINY = dict(
    image_size=8,
    patch_size=4,
    num_channels=3,
    encoder_stride=4,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
)


def test_mask_token_missing_from_a_plain_checkpoint_is_initialised_and_reported(tmp_path):
    torch.manual_seed(0)
    plain = ViTModel(ViTConfig(**TINY))
    plain.save_pretrained(tmp_path)
    model, info = ViTModel.from_pretrained(tmp_path, use_mask_token=True, output_loading_info=True)
    assert info["missing_keys"] == {"embeddings.mask_token"} or list(info["missing_keys"]) == ["embeddings.mask_token"]
    pixels = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(model(pixels).last_hidden_state, plain(pixels).last_hidden_state)
    # The SimMIM head over a plain encoder checkpoint (transformers' ViTForMaskedImageModeling case).
    simmim, info = ViTForMaskedImageModeling.from_pretrained(tmp_path, output_loading_info=True)
    assert any(key.endswith("embeddings.mask_token") for key in info["missing_keys"])


def test_other_missing_encoder_weights_are_still_refused(tmp_path):
    ViTModel(ViTConfig(**TINY)).save_pretrained(tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    dropped = next(key for key in weights if "layers.1" in key)
    del weights[dropped]
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match="missing"):
        ViTModel.from_pretrained(tmp_path, use_mask_token=True)
