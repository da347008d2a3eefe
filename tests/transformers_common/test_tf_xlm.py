"""transformers' own common and generation tests against our XLM. Inputs as transformers' XLM
tester gives them: token ids and per-row ``lengths`` (no attention mask), two languages."""

import torch

from harness import BC_CACHE_NAME, family_test, token_inputs


def xlm_inputs(tester, config) -> dict:
    inputs = token_inputs(tester, config)
    return {"input_ids": inputs["input_ids"], "lengths": inputs.pop("attention_mask").sum(-1)}


XLMTransformersTest = family_test(
    "XLMTransformersTest", "hfv_xlm", "xlm-mini", dict(hidden_size=37), inputs_fn=xlm_inputs, generates=True,
    n_langs=2, intermediate_size=128)
XLMTransformersTest.__module__ = __name__
del torch, BC_CACHE_NAME
