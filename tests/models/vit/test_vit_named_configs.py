"""ViT's named configs: the paper's sizes (Table 1) within 3%, and vit-mini for 28 x 28 grayscale images."""

import pytest
import torch
from transformers import AutoConfig, AutoModel

import hf_variants
from hf_variants.models.named_configs import MODELING_CONFIGS_DIR


def count_parameters(config) -> int:
    with torch.device("meta"):
        model = AutoModel.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "name,layers,hidden,heads,patch,paper_params",
    [
        ("vit-base-patch16", 12, 768, 12, 16, 86e6),
        ("vit-large-patch16", 24, 1024, 16, 16, 307e6),
        ("vit-huge-patch14", 32, 1280, 16, 14, 632e6),
    ],
)
def test_paper_sizes_within_3_percent(name, layers, hidden, heads, patch, paper_params):
    config = AutoConfig.from_pretrained(str(MODELING_CONFIGS_DIR / name))
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("hfv_vit", layers, hidden)
    assert (config.num_attention_heads, config.patch_size, config.image_size) == (heads, patch, 224)
    assert config.intermediate_size == 4 * hidden and config.pre_layer_norm
    assert abs(count_parameters(config) - paper_params) / paper_params < 0.03


def test_vit_mini_classifies_28x28_grayscale_images():
    config = hf_variants.named_config("vit-mini", num_labels=10)
    assert (config.image_size, config.num_channels, config.num_patches) == (28, 1, 49)
    model = hf_variants.ViTForImageClassification(config).eval()
    out = model(torch.rand(4, 1, 28, 28), labels=torch.tensor([0, 3, 9, 1]))
    assert out.logits.shape == (4, 10) and torch.isfinite(out.loss)
    pretraining = hf_variants.ViTForPreTraining(config).eval()
    assert pretraining(torch.rand(2, 1, 28, 28)).logits.shape == (2, 49, 16)
