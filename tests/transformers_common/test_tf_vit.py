"""transformers' own common tests against our ViT (pixels in: ``has_text_modality=False``), and
against its MAE pretraining model the way transformers tests ViTMAE (a masked sequence)."""

import math

import torch
from torch import nn

import hf_variants
from tests.transformers_common.harness import (
    ConfigTests,
    ModelTesterMixin,
    TinyModelTester,
    named_config,
    skip_differences,
    unittest,
)

IMAGE, PATCH, CHANNELS = 8, 4, 3
NUM_PATCHES = (IMAGE // PATCH) ** 2


def vit_config(**overrides):
    return named_config(
        "vit-mini",
        "hfv_vit",
        image_size=IMAGE,
        patch_size=PATCH,
        num_channels=CHANNELS,
        encoder_stride=PATCH,
        decoder_hidden_size=32,
        decoder_num_hidden_layers=1,
        decoder_num_attention_heads=4,
        decoder_intermediate_size=37,
        **overrides,
    )


def pixel_inputs(tester, config) -> dict:
    return {"pixel_values": torch.randn(tester.batch_size, CHANNELS, IMAGE, IMAGE)}


class ViTTransformersTest(ConfigTests, ModelTesterMixin, unittest.TestCase):
    all_model_classes = (
        hf_variants.ViTModel,
        hf_variants.ViTForImageClassification,
        hf_variants.ViTForMaskedImageModeling,
    )
    config_class = hf_variants.ViTConfig
    config_kwargs = dict(hidden_size=37)
    config_has_text_modality = False
    test_resize_embeddings = False

    def setUp(self):
        # num_masks / mask_length: the SimMIM mask the eager-vs-sdpa test builds, as transformers' ViT tester.
        self.model_tester = TinyModelTester(
            self,
            vit_config,
            pixel_inputs,
            seq_length=NUM_PATCHES + 1,
            image_size=IMAGE,
            patch_size=PATCH,
            num_channels=CHANNELS,
            num_masks=int(0.5 * (NUM_PATCHES + 1)),
            mask_length=NUM_PATCHES,
        )

    def test_model_get_set_embeddings(self):
        """transformers' ViTModelTest overrides the common test the same way: a vision model's input
        embedding is its patch projection, not an nn.Embedding."""
        config, _ = self.model_tester.prepare_config_and_inputs_for_common()
        for model_class in self.all_model_classes:
            model = model_class(config)
            self.assertIsInstance(model.get_input_embeddings(), nn.Module)
            output = model.get_output_embeddings()
            self.assertTrue(output is None or isinstance(output, nn.Linear))


class ViTMAETransformersTest(ModelTesterMixin, unittest.TestCase):
    """ViTForPreTraining keeps a random (1 - mask_ratio) of the patches: the encoder's sequence is
    ceil((1 - mask_ratio) * (patches + 1)) long, as transformers' ViTMAE tester computes it. The
    masking noise is an input (one fixed draw per test), so two calls mask the same patches, as
    transformers' ViTMAE tests fix it."""

    all_model_classes = (hf_variants.ViTForPreTraining,)
    test_resize_embeddings = False
    test_model_get_set_embeddings = ViTTransformersTest.test_model_get_set_embeddings

    additional_model_inputs = ["noise"]  # the eager-vs-sdpa test extends it with the batch

    def setUp(self):
        config = vit_config()
        length = int(math.ceil((1 - config.mask_ratio) * (NUM_PATCHES + 1)))
        self.model_tester = TinyModelTester(
            self, vit_config, mae_inputs, seq_length=length, image_size=IMAGE, patch_size=PATCH, num_channels=CHANNELS
        )


def mae_inputs(tester, config) -> dict:
    noise = torch.rand(tester.batch_size, NUM_PATCHES, generator=torch.Generator().manual_seed(2))
    return {**pixel_inputs(tester, config), "noise": noise}


skip_differences(ViTTransformersTest)
skip_differences(ViTMAETransformersTest)
