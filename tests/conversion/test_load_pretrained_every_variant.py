"""`hf_variants.load_pretrained` loads a folder saved by any registered variant, including one with
no transformers key map (Transformer-XL, which transformers v5 removed): run_clm.py and the scripts
load checkpoints through it."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_variants
from hf_variants.models.named_configs import named_config


def test_a_saved_transfo_xl_loads_with_identical_outputs(tmp_path):
    config = named_config("transfo-xl-mini")
    config.update(
        dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, vocab_size=50, mem_len=8)
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.save_pretrained(tmp_path)
    loaded = hf_variants.load_pretrained(str(tmp_path), AutoModelForCausalLM).eval()
    assert type(loaded) is type(model)
    ids = torch.randint(0, 50, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits, model(input_ids=ids).logits, atol=0, rtol=0)


def test_an_unknown_model_type_is_still_refused_with_its_name(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "mamba"}')
    with pytest.raises(ValueError, match="model_type 'mamba'"):
        hf_variants.load_pretrained(str(tmp_path), AutoModelForCausalLM)
