"""Issue 31: transformers' ConfigTester passes each family's own names (T5's d_model, XLNet's
d_inner, XLM's emb_dim). Our configs store the shared names (hidden_size, intermediate_size, ...)
and take transformers' names as aliases (attribute_map): given, read and written back through
the alias, saved once under the stored name (docs/transformers_tests.md)."""

from __future__ import annotations

import json

import pytest

from hf_variants import T5Config, XLMConfig, XLNetConfig

CASES = [
    (T5Config, "d_model", "hidden_size"),
    (T5Config, "d_ff", "intermediate_size"),
    (T5Config, "num_heads", "num_attention_heads"),
    (T5Config, "num_layers", "num_hidden_layers"),
    (XLNetConfig, "d_inner", "intermediate_size"),
    (XLNetConfig, "d_model", "hidden_size"),
    (XLMConfig, "emb_dim", "hidden_size"),
    (XLMConfig, "n_layers", "num_hidden_layers"),
]


@pytest.mark.parametrize("config_class,alias,stored", CASES, ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_transformers_names_are_aliases_of_the_stored_ones(config_class, alias, stored, tmp_path):
    config = config_class(**{alias: 37})
    assert getattr(config, alias) == getattr(config, stored) == 37
    setattr(config, alias, 41)
    assert getattr(config, stored) == 41
    written = json.loads(config.to_json_string())
    assert written[stored] == 41 and alias not in written  # one name on disk: no two values to disagree
    config.save_pretrained(tmp_path)
    assert getattr(config_class.from_pretrained(tmp_path), alias) == 41
