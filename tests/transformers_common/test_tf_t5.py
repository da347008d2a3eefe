"""transformers' own common and generation tests against our T5 (encoder-decoder heads) and its
encoder-only model, as transformers splits them (T5ModelTest / T5EncoderOnlyModelTest)."""

from functools import partial

import hf_variants
from harness import (
    BC_CACHE_NAME, ConfigTests, GenerationMixinPresent, expect_open_failures, skip_differences, GenerationTesterMixin, ModelTesterMixin, TinyModelTester, named_config,
    token_inputs, unittest,
)

SPEC = hf_variants.registry.SPECS["hfv_t5"]
ENCODER_DECODER = tuple(cls for head, cls in SPEC.classes.items() if head != "EncoderModel")


class T5TransformersTest(ConfigTests, GenerationMixinPresent, ModelTesterMixin, GenerationTesterMixin, unittest.TestCase):
    all_model_classes = ENCODER_DECODER
    config_class = hf_variants.T5Config
    config_kwargs = dict(d_model=37, d_ff=37, d_kv=37 // 37, num_heads=1)
    is_encoder_decoder = True

    def setUp(self):
        self.model_tester = TinyModelTester(
            self, lambda: named_config("t5-mini", "hfv_t5", head_dim=8, decoder_layers=2),
            partial(token_inputs, decoder=True, eos=True))


class T5EncoderOnlyTransformersTest(ModelTesterMixin, unittest.TestCase):
    all_model_classes = (hf_variants.T5EncoderModel,)

    def setUp(self):
        # An encoder alone, as transformers' T5EncoderOnlyModelTester builds its config.
        self.model_tester = TinyModelTester(
            self, lambda: named_config("t5-mini", "hfv_t5", head_dim=8, is_encoder_decoder=False))


skip_differences(T5TransformersTest)
skip_differences(T5EncoderOnlyTransformersTest)
expect_open_failures(T5TransformersTest, {
    "test_bc_cache_name_forward": BC_CACHE_NAME,
    "test_training_gradient_checkpointing_use_reentrant_true": (
        "open: reentrant checkpointing recomputes a layer while the shared relative-position bias "
        "(computed once, outside the checkpointed layers) is backpropagated through twice"),
    "test_config": "open: ConfigTester reads T5's own names (d_model, ...) from the serialised config; ours writes hidden_size",
    **{name: ("open (not yet classified): eager-vs-sdpa comparison builds its own batch in which "
              "T5ForSequenceClassification finds rows without exactly one eos")
       for name in dir(T5TransformersTest) if name.startswith("test_eager_matches_sdpa_inference_")},
    "test_inputs_embeds": "open (not yet classified): T5ForSequenceClassification needs input_ids to find the eos",
})
