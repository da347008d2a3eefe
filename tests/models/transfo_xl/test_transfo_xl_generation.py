"""generate() on Transformer-XL: the prompt runs once, then each token runs alone on the memory.

While the text fits in ``mem_len`` that is exactly a causal run over the whole text (the memory
holds every earlier state), so the tokens must equal greedy decoding by recomputation (a loop of
full forwards, argmax at the last position) and generate() without the cache; beam search must
reorder the memory with its beams. With an adaptive softmax the logits are log-probabilities: the
same argmax.
"""

from __future__ import annotations

import pytest
import torch
from test_transfo_xl import tiny

from hf_variants import TransfoXLLMHeadModel

NEW_TOKENS = 6


def greedy_by_recomputation(model: TransfoXLLMHeadModel, prompt: torch.Tensor, steps: int) -> torch.Tensor:
    text = prompt
    for _ in range(steps):
        logits = model(text, use_mems=False).logits  # (B, T, V)
        text = torch.cat([text, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return text


@pytest.mark.parametrize("adaptive", [False, True], ids=["softmax", "adaptive-softmax"])
def test_greedy_generation_with_memory_equals_recomputation(adaptive):
    torch.manual_seed(0)
    overrides = dict(mem_len=32, cutoffs=[40, 70], div_val=2) if adaptive else dict(mem_len=32)
    model = TransfoXLLMHeadModel(tiny(**overrides)).eval()
    assert model.config.adaptive_softmax == adaptive
    prompt = torch.randint(0, 99, (3, 7))
    expected = greedy_by_recomputation(model, prompt, NEW_TOKENS)
    settings = dict(max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0, eos_token_id=None)
    assert torch.equal(model.generate(prompt, **settings), expected)
    assert torch.equal(model.generate(prompt, use_cache=False, **settings), expected)


def test_beam_search_with_memory_equals_beam_search_by_recomputation():
    torch.manual_seed(1)
    model = TransfoXLLMHeadModel(tiny(mem_len=32)).eval()
    prompt = torch.randint(0, 99, (2, 5))
    settings = dict(max_new_tokens=NEW_TOKENS, num_beams=3, do_sample=False, pad_token_id=0, eos_token_id=None)
    assert torch.equal(model.generate(prompt, **settings), model.generate(prompt, use_cache=False, **settings))


def test_memory_shorter_than_the_text_keeps_the_last_mem_len_states():
    """Past mem_len, each new token sees only the last mem_len states (the training-time
    semantics); mem_len=0 (no memory) makes every step recompute the whole text."""
    torch.manual_seed(2)
    model = TransfoXLLMHeadModel(tiny(mem_len=2)).eval()
    prompt = torch.randint(0, 99, (2, 9))
    settings = dict(max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0, eos_token_id=None)
    step = model(prompt, use_mems=True)
    assert all(layer.shape[0] == 2 for layer in step.mems)  # (M, B, H): the last two states
    assert torch.equal(
        model.generate(prompt, mem_len=0, **settings), greedy_by_recomputation(model, prompt, NEW_TOKENS)
    )


def test_padded_prompt_is_refused():
    model = TransfoXLLMHeadModel(tiny()).eval()
    prompt = torch.randint(1, 99, (2, 5))
    mask = torch.ones_like(prompt)
    mask[0, :2] = 0
    with pytest.raises(ValueError, match="no padding mask"):
        model.generate(prompt, attention_mask=mask, max_new_tokens=2, pad_token_id=0)
