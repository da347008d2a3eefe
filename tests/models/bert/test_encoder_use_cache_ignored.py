"""Regression found by transformers' own common tests (issue 31, ``test_bc_cache_name_forward``):
encoder models ignore ``use_cache=True``, as transformers' encoder models do (``BertModel`` sets
it to False unless its config is a decoder's), where ours raised "keeps no cache". Pipelines and
transformers' tests pass ``use_cache=True`` to every model; the output then holds no cache."""

from __future__ import annotations

import pytest
import torch

from hf_variants.modules.cache import output_cache
from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config, tiny_inputs

# Every head of the BERT-shaped encoder families, plus the encoder stack of an encoder-decoder.
CASES = [
    (variant, head)
    for variant in ("bert", "roberta", "albert", "electra")
    for head in ("Model", "ForSequenceClassification", "ForTokenClassification")
]


@pytest.mark.parametrize(("variant", "head"), CASES)
def test_use_cache_true_is_ignored_by_encoders(variant, head):
    spec = SPECS[f"hfv_{variant}"]
    torch.manual_seed(0)
    model = spec.classes[head](tiny_config(spec)).eval()
    inputs = tiny_inputs(spec, head, model.config)
    with torch.no_grad():
        plain = model(**inputs)
        cached = model(**inputs, use_cache=True)
    assert output_cache(cached) is None
    name = "last_hidden_state" if head == "Model" else "logits"
    torch.testing.assert_close(getattr(cached, name), getattr(plain, name))


def test_encoder_stack_of_an_encoder_decoder_ignores_use_cache():
    spec = SPECS["hfv_t5"]
    model = spec.classes["ForConditionalGeneration"](tiny_config(spec)).eval()
    ids = torch.randint(3, 99, (2, 5))
    with torch.no_grad():
        torch.testing.assert_close(
            model.get_encoder()(ids, use_cache=True).last_hidden_state, model.get_encoder()(ids).last_hidden_state
        )
