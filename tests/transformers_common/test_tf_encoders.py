"""transformers' own common tests (ModelTesterMixin, ConfigTester) against our RoBERTa, ALBERT
and ELECTRA: BERT-shaped encoders whose tiny testers differ only in config and pretraining labels."""

from harness import ENCODER_USE_CACHE, expect_open_failures, family_test, pretraining_labels, token_labels

RobertaTransformersTest = family_test(
    "RobertaTransformersTest", "hfv_roberta", "roberta-mini", dict(hidden_size=37),
    {"RobertaForPreTraining": pretraining_labels()})
AlbertTransformersTest = family_test(
    "AlbertTransformersTest", "hfv_albert", "albert-mini", dict(hidden_size=37),
    {"AlbertForPreTraining": pretraining_labels("sentence_order_label")})
ElectraTransformersTest = family_test(
    "ElectraTransformersTest", "hfv_electra", "electra-mini", dict(hidden_size=37),
    {"ElectraForPreTraining": token_labels, "ElectraForReplacedTokenDetection": token_labels})

for _test in (RobertaTransformersTest, AlbertTransformersTest, ElectraTransformersTest):
    _test.__module__ = __name__
    expect_open_failures(_test, {"test_bc_cache_name_forward": ENCODER_USE_CACHE})
