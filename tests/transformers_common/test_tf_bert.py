"""transformers' own common model tests (ModelTesterMixin, ConfigTester) against our BERT."""

import hf_variants
from harness import ConfigTests, ModelTesterMixin, TinyModelTester, named_config, unittest

HEADS = list(hf_variants.registry.SPECS["hfv_bert"].classes)


class BertTransformersTest(ConfigTests, ModelTesterMixin, unittest.TestCase):
    all_model_classes = tuple(getattr(hf_variants, f"Bert{head}") for head in HEADS)
    config_class = hf_variants.BertConfig
    config_kwargs = dict(hidden_size=37)

    def setUp(self):
        self.model_tester = TinyModelTester(self, lambda: named_config("bert-mini", "hfv_bert"))
