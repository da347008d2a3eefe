"""Regression found by transformers' own common tests (issue 31, ``test_bc_cache_name_forward``):
where the installed transformers names the cache ``cache`` (>= 5.24), a cache handed to a
generating model's forward as ``past_key_values`` works but warns (``FutureWarning``, "`past_key_values`
is deprecated"), as transformers' own models warn; ``cache=`` and ``generate()`` (the library's own
calls pass the new name) do not. Under earlier releases ``generate()`` passes ``past_key_values``:
no warning there."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

from hf_variants.modules.cache import CACHE_FIELD, output_cache
from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config

NEW_NAME = CACHE_FIELD == "cache"
HEADS = [
    ("gpt", "LMHeadModel"),
    ("gpt", "DoubleHeadsModel"),
    ("t5", "ForConditionalGeneration"),
    ("transformer", "ForConditionalGeneration"),
]


def deprecation_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "`past_key_values` is deprecated" in str(w.message)]


def build(variant: str, head: str):
    spec = SPECS[f"hfv_{variant}"]
    torch.manual_seed(0)
    return spec.classes[head](tiny_config(spec)).eval()


def step_inputs(model, ids: torch.Tensor) -> dict:
    if model.config.is_encoder_decoder:
        return {"input_ids": ids, "decoder_input_ids": ids[:, :3]}
    return {"input_ids": ids[:, :3]}


@pytest.mark.parametrize(("variant", "head"), HEADS)
def test_old_cache_name_warns_and_gives_the_same_output(variant, head):
    model = build(variant, head)
    ids = torch.randint(3, 99, (2, 5))
    with torch.no_grad():
        first = model(**step_inputs(model, ids), use_cache=True)
        cache = output_cache(first)
        assert cache is not None
        follow = (
            {"decoder_input_ids": ids[:, 3:4], "input_ids": ids}
            if model.config.is_encoder_decoder
            else {"input_ids": ids[:, 3:4]}
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            new = model(**follow, cache=copy.deepcopy(cache))
        assert not deprecation_warnings(caught)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old = model(**follow, past_key_values=copy.deepcopy(cache))
    assert len(deprecation_warnings(caught)) == (1 if NEW_NAME else 0), deprecation_warnings(caught)
    if NEW_NAME:
        assert all(w.category is FutureWarning for w in caught if "`past_key_values` is deprecated" in str(w.message))
    torch.testing.assert_close(old.logits, new.logits)


@pytest.mark.parametrize(("variant", "head"), HEADS)
def test_generate_passes_the_new_name(variant, head):
    model = build(variant, head)
    ids = torch.randint(3, 99, (2, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False, num_beams=2)
    assert not deprecation_warnings(caught)
