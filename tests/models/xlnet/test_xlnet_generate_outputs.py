"""Issue 31: XLNet's generate(output_attentions=True / output_hidden_states=True) returns what
transformers' XLNetLMHeadModel returns, step by step (shapes and values), beside the same tokens."""

from __future__ import annotations

import torch

import hf_variants
from hf_variants import XLNetConfig, XLNetLMHeadModel

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    head_dim=8,
    intermediate_size=37,
    hidden_dropout_prob=0.0,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=2,
)


def flatten(nested) -> list[torch.Tensor]:
    if isinstance(nested, torch.Tensor):
        return [nested]
    return [tensor for item in nested if item is not None for tensor in flatten(item)]


def test_generate_attentions_and_hidden_states_match_transformers():
    torch.manual_seed(0)
    ours = XLNetLMHeadModel(XLNetConfig(**TINY)).eval()
    theirs = hf_variants.to_transformers(ours).eval()
    ids = torch.randint(3, 99, (2, 4))
    kwargs = dict(
        max_new_tokens=3,
        do_sample=False,
        output_attentions=True,
        output_hidden_states=True,
        return_dict_in_generate=True,
        eos_token_id=None,
    )
    a, b = ours.generate(ids, **kwargs), theirs.generate(ids, **kwargs)
    assert torch.equal(a.sequences, b.sequences)
    for field in ("attentions", "hidden_states"):
        steps_a, steps_b = getattr(a, field), getattr(b, field)
        assert len(steps_a) == len(steps_b) == 3
        for step_a, step_b in zip(steps_a, steps_b):
            flat_a, flat_b = flatten(step_a), flatten(step_b)
            assert [t.shape for t in flat_a] == [t.shape for t in flat_b], field
            for x, y in zip(flat_a, flat_b):
                torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-4)
