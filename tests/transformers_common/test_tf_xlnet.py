"""transformers' own common and generation tests against our XLNet."""

import torch

from tests.transformers_common.harness import family_test, token_inputs


def xlnet_inputs(tester, config) -> dict:
    """Token ids, mask and two segments (token_type_ids: XLNet's relative segment encoding)."""
    inputs = token_inputs(tester, config)
    inputs["token_type_ids"] = (
        (torch.arange(tester.seq_length) >= tester.seq_length // 2).long().expand(tester.batch_size, -1)
    )
    return inputs


XLNetTransformersTest = family_test(
    "XLNetTransformersTest",
    "hfv_xlnet",
    "xlnet-mini",
    dict(hidden_size=37),
    inputs_fn=xlnet_inputs,
    generates=True,
    head_dim=8,
)
XLNetTransformersTest.__module__ = __name__
# mask_emb only serves a target_mapping (permutation pretraining's query stream), which these
# common inputs do not hold: it legitimately gets no gradient (transformers' flag for such cases).
XLNetTransformersTest.test_all_params_have_gradient = False
