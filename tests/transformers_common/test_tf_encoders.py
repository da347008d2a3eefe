"""transformers' own common tests (ModelTesterMixin, ConfigTester) against our RoBERTa, ALBERT
and ELECTRA: BERT-shaped encoders whose tiny testers differ only in config and pretraining labels."""

import hf_variants
from harness import ENCODER_USE_CACHE, expect_open_failures, family_test, pretraining_labels, token_labels

RobertaTransformersTest = family_test(
    "RobertaTransformersTest", "hfv_roberta", "roberta-mini", dict(hidden_size=37),
    {"RobertaForPreTraining": pretraining_labels()})
AlbertTransformersTest = family_test(
    "AlbertTransformersTest", "hfv_albert", "albert-mini", dict(hidden_size=37, embedding_size=16),
    {"AlbertForPreTraining": pretraining_labels("sentence_order_label")}, embedding_size=16)
# transformers' ElectraForPreTraining is the discriminator alone: ours of that name is
# ElectraForReplacedTokenDetection. Our ElectraForPreTraining (generator + discriminator, sampling
# the replacements inside forward) has no transformers counterpart and is tested on its own below.
ElectraTransformersTest = family_test(
    "ElectraTransformersTest", "hfv_electra", "electra-mini", dict(hidden_size=37),
    {"ElectraForReplacedTokenDetection": token_labels},
    classes=tuple(cls for head, cls in hf_variants.registry.SPECS["hfv_electra"].classes.items() if head != "ForPreTraining"))
ElectraPairTransformersTest = family_test(
    "ElectraPairTransformersTest", "hfv_electra", "electra-mini", dict(hidden_size=37),
    {"ElectraForPreTraining": token_labels}, classes=(hf_variants.ElectraForPreTraining,))

for _test in (RobertaTransformersTest, AlbertTransformersTest, ElectraTransformersTest, ElectraPairTransformersTest):
    _test.__module__ = __name__
    expect_open_failures(_test, {"test_bc_cache_name_forward": ENCODER_USE_CACHE})
del _test  # not a test class of its own

expect_open_failures(ElectraPairTransformersTest, {
    "test_retain_grad_hidden_states_attentions": (
        "open: the hidden states ElectraForPreTraining returns hold no gradient after backward (they are "
        "not the ones the loss is computed from)"),
    "test_base_model_prefix_loads_base_weights": (
        "open (models/electra, the electra branch): a bare ElectraModel checkpoint loads into the generator "
        "of ElectraForPreTraining, where the test expects the base prefix 'electra' (the discriminator)"),
    "test_inputs_embeds": "open: ElectraForPreTraining samples replacement ids, so it needs input_ids",
    "test_model_outputs_equivalence": (
        "open: ElectraForPreTraining samples its replacements inside forward, also in eval mode, so two "
        "calls differ"),
})
