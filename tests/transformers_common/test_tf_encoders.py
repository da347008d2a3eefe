"""transformers' own common tests (ModelTesterMixin, ConfigTester) against our RoBERTa, ALBERT
and ELECTRA: BERT-shaped encoders whose tiny testers differ only in config and pretraining labels."""

import hf_variants
from tests.transformers_common.harness import family_test, pretraining_labels, skip_differences, token_labels

RobertaTransformersTest = family_test(
    "RobertaTransformersTest",
    "hfv_roberta",
    "roberta-mini",
    dict(hidden_size=37),
    {"RobertaForPreTraining": pretraining_labels()},
)
AlbertTransformersTest = family_test(
    "AlbertTransformersTest",
    "hfv_albert",
    "albert-mini",
    dict(hidden_size=37, embedding_size=16),
    {"AlbertForPreTraining": pretraining_labels("sentence_order_label")},
    embedding_size=16,
)
# transformers' ElectraForPreTraining is the discriminator alone: ours of that name is
# ElectraForReplacedTokenDetection. Our ElectraForPreTraining (generator + discriminator, sampling
# the replacements inside forward) has no transformers counterpart and is tested on its own below.
ElectraTransformersTest = family_test(
    "ElectraTransformersTest",
    "hfv_electra",
    "electra-mini",
    dict(hidden_size=37),
    {"ElectraForReplacedTokenDetection": token_labels},
    classes=tuple(
        cls for head, cls in hf_variants.registry.SPECS["hfv_electra"].classes.items() if head != "ForPreTraining"
    ),
)
ElectraPairTransformersTest = family_test(
    "ElectraPairTransformersTest",
    "hfv_electra",
    "electra-mini",
    dict(hidden_size=37),
    {"ElectraForPreTraining": token_labels},
    classes=(hf_variants.ElectraForPreTraining,),
)

for _test in (RobertaTransformersTest, AlbertTransformersTest, ElectraTransformersTest, ElectraPairTransformersTest):
    _test.__module__ = __name__
del _test  # not a test class of its own

# Our joint ElectraForPreTraining has no transformers counterpart; where it differs from what the
# mixin assumes of a model, by design (docs/transformers_tests.md, "Deliberate differences"):
SAMPLES_IDS = (
    "ElectraForPreTraining (generator + discriminator) samples replacement token ids inside forward: "
    "it needs input_ids, and with labels two calls sample differently (the RTD objective; "
    "docs/transformers_tests.md)"
)
skip_differences(
    ElectraPairTransformersTest,
    {
        "test_inputs_embeds": SAMPLES_IDS,
        "test_model_outputs_equivalence": SAMPLES_IDS,
        "test_base_model_prefix_loads_base_weights": (
            "ElectraForPreTraining holds two ElectraModel children, the discriminator under the base prefix "
            "'electra' and the generator; the test wants every child of the base class at the base prefix. A bare "
            "ElectraModel checkpoint does load into the discriminator "
            "(tests/models/electra/test_electra_pretraining_transformers_behaviour.py; docs/transformers_tests.md)"
        ),
    },
)
