"""transformers' own common and generation tests against our T5, split as transformers splits its
own (T5ModelTest: encoder-decoder heads; T5EncoderOnlyModelTest: T5EncoderModel and the token
classifier, which runs the encoder alone), plus the sequence classifier on its own (see below)."""

from functools import partial

import hf_variants
from tests.transformers_common.harness import (
    ConfigTests,
    GenerationMixinPresent,
    GenerationTesterMixin,
    ModelTesterMixin,
    TinyModelTester,
    named_config,
    skip_differences,
    token_inputs,
    unittest,
)


def t5_config(**overrides):
    return named_config("t5-mini", "hfv_t5", head_dim=8, decoder_layers=2, **overrides)


class _T5EncoderDecoder(ModelTesterMixin):
    is_encoder_decoder = True

    def setUp(self):
        # Every row ends in eos (T5's sequence classifier reads it), as transformers' T5 tester gives.
        self.model_tester = TinyModelTester(self, t5_config, partial(token_inputs, decoder=True, eos=True))


class T5TransformersTest(
    ConfigTests, GenerationMixinPresent, _T5EncoderDecoder, GenerationTesterMixin, unittest.TestCase
):
    all_model_classes = (
        hf_variants.T5Model,
        hf_variants.T5ForConditionalGeneration,
        hf_variants.T5ForQuestionAnswering,
    )
    config_class = hf_variants.T5Config
    # Our T5Config stores hidden_size / intermediate_size / num_attention_heads (T5's d_model / d_ff /
    # num_heads are accepted and readable as aliases): ConfigTester is given the stored names, as
    # transformers' testers give theirs (docs/transformers_tests.md).
    config_kwargs = dict(hidden_size=37)


# Not applicable to the sequence classifier: the eager-vs-sdpa comparisons append rows of random
# ids below 5 that hold no or two eos tokens, which T5ForSequenceClassification (ours and
# transformers') refuses; transformers never runs them on T5 (its T5 has no SDPA). Ours runs them on
# the three heads above. inputs_embeds: the classifier finds the eos in input_ids (transformers'
# raises NotImplementedError for inputs_embeds too).
NOT_APPLICABLE_SEQ_CLS = (
    "not applicable to T5ForSequenceClassification: the test builds rows without exactly one eos, or gives "
    "inputs_embeds, where the classifier reads the eos position from input_ids (transformers' raises too)"
)


class T5ForSequenceClassificationTransformersTest(_T5EncoderDecoder, unittest.TestCase):
    all_model_classes = (hf_variants.T5ForSequenceClassification,)


class T5EncoderOnlyTransformersTest(ModelTesterMixin, unittest.TestCase):
    all_model_classes = (hf_variants.T5EncoderModel, hf_variants.T5ForTokenClassification)

    def setUp(self):
        # An encoder alone, as transformers' T5EncoderOnlyModelTester builds its config.
        self.model_tester = TinyModelTester(self, lambda: t5_config(is_encoder_decoder=False))


for _test in (T5TransformersTest, T5ForSequenceClassificationTransformersTest, T5EncoderOnlyTransformersTest):
    skip_differences(_test)
del _test  # not a test class of its own
skip_differences(
    T5ForSequenceClassificationTransformersTest,
    {
        name: NOT_APPLICABLE_SEQ_CLS
        for name in dir(T5ForSequenceClassificationTransformersTest)
        if name.startswith("test_eager_matches_sdpa_inference_") or name == "test_inputs_embeds"
    },
)
