"""transformers' own common and generation tests against our GPT-2 and GPT-1 (one GPT family)."""

import torch

import hf_variants
from tests.transformers_common.harness import (
    ConfigTests,
    GenerationMixinPresent,
    GenerationTesterMixin,
    ModelTesterMixin,
    TinyLabels,
    TinyModelTester,
    named_config,
    skip_differences,
    unittest,
)

CLASSES = tuple(hf_variants.registry.SPECS["hfv_gpt"].classes.values())


def double_heads_labels(tester, inputs) -> dict:
    """(batch, choices, seq) inputs with LM labels, [EXTRACT] positions and the right choice, as
    transformers' GPT-2 tester gives its double-heads model."""
    expand = lambda t: t.unsqueeze(1).expand(-1, tester.num_choices, -1).contiguous()  # noqa: E731
    return {
        "input_ids": expand(inputs["input_ids"]),
        "attention_mask": expand(inputs["attention_mask"]),
        "labels": expand(inputs["input_ids"]),
        "mc_token_ids": torch.zeros(tester.batch_size, tester.num_choices, dtype=torch.long),
        "mc_labels": torch.zeros(tester.batch_size, dtype=torch.long),
    }


class _GPTTests(TinyLabels, ConfigTests, GenerationMixinPresent, ModelTesterMixin, GenerationTesterMixin):
    all_model_classes = CLASSES
    config_class = hf_variants.GPTConfig
    config_kwargs = dict(hidden_size=37)
    named = ""
    extra_labels = {"GPTDoubleHeadsModel": double_heads_labels}

    def setUp(self):
        self.model_tester = TinyModelTester(self, lambda: named_config(self.named, "hfv_gpt", pad_token_id=0))


class GPT2TransformersTest(_GPTTests, unittest.TestCase):
    named = "gpt2-mini"


class OpenAIGPTTransformersTest(_GPTTests, unittest.TestCase):
    named = "openai-gpt"


for _test in (GPT2TransformersTest, OpenAIGPTTransformersTest):
    skip_differences(_test)
del _test  # not a test class of its own
