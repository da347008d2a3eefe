"""transformers' own common and generation tests against our XLM. Inputs as transformers' XLM
tester gives them: token ids and per-row ``lengths`` (no attention mask), with two languages and
their ``langs`` ids (the language embedding is then used, and trained)."""

import torch

from tests.transformers_common.harness import family_test, token_inputs


def xlm_inputs(tester, config) -> dict:
    inputs = token_inputs(tester, config)
    return {
        "input_ids": inputs["input_ids"],
        "lengths": inputs["attention_mask"].sum(-1),
        "langs": torch.randint(0, config.n_langs, inputs["input_ids"].shape),
    }


XLMTransformersTest = family_test(
    "XLMTransformersTest",
    "hfv_xlm",
    "xlm-mini",
    dict(hidden_size=37),
    inputs_fn=xlm_inputs,
    generates=True,
    n_langs=2,
    intermediate_size=128,
)
XLMTransformersTest.__module__ = __name__
