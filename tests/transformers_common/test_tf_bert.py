"""transformers' own common model tests (ModelTesterMixin, ConfigTester) against our BERT."""

import hf_variants
from tests.transformers_common.harness import (
    ConfigTests,
    ModelTesterMixin,
    TinyLabels,
    TinyModelTester,
    named_config,
    skip_differences,
    unittest,
)

HEADS = list(hf_variants.registry.SPECS["hfv_bert"].classes)


class BertTransformersTest(TinyLabels, ConfigTests, ModelTesterMixin, unittest.TestCase):
    all_model_classes = tuple(getattr(hf_variants, f"Bert{head}") for head in HEADS)
    config_class = hf_variants.BertConfig
    config_kwargs = dict(hidden_size=37)

    def setUp(self):
        self.model_tester = TinyModelTester(self, lambda: named_config("bert-mini", "hfv_bert"))


# Pretraining: MLM labels and the next-sentence label, as transformers' BERT tester adds them.
def _pretraining_labels(tester, inputs):
    import torch

    return {
        "labels": torch.zeros(tester.batch_size, tester.seq_length, dtype=torch.long),
        "next_sentence_label": torch.zeros(tester.batch_size, dtype=torch.long),
    }


BertTransformersTest.extra_labels = {"BertForPreTraining": _pretraining_labels}
skip_differences(BertTransformersTest)
