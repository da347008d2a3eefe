"""Issue 43: transformers' generation tests read ``config.head_dim`` (when the config has the
attribute) for the cache's per-layer shape (batch, heads, seq, head_dim); ``GPTConfig.head_dim`` was
None, so six of them failed on GPT-2 and GPT-1 alike (past_key_values_format, greedy / beam dict
outputs with the cache, assisted decoding against greedy with a random and the same assistant,
assisted sampling). Here: the config's head width is a real value, and the cache after a forward or
a ``generate()`` has the shape the config announces; assisted decoding gives greedy's tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from transformers import AutoConfig

from hf_variants import GPTConfig, GPTLMHeadModel

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=1,
)
GENERATIONS = pytest.mark.parametrize("pre_layer_norm", [True, False], ids=["gpt2", "gpt1"])
PROMPT_LENGTH, NEW_TOKENS = 7, 3


def tiny_lm(pre_layer_norm: bool, seed: int = 0, **overrides) -> GPTLMHeadModel:
    torch.manual_seed(seed)
    return GPTLMHeadModel(GPTConfig(**{**TINY, **overrides}, pre_layer_norm=pre_layer_norm)).eval()


def prompt(batch: int = 2) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(3, TINY["vocab_size"], (batch, PROMPT_LENGTH), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def assert_cache_shape(cache, config: GPTConfig, batch: int, cached_length: int) -> None:
    """What transformers' ``_check_past_key_values_for_generate`` asserts: one (keys, values) pair
    per layer, each (batch, config.num_attention_heads, cached_length, config.head_dim)."""
    expected = (batch, config.num_attention_heads, cached_length, config.head_dim)
    assert len(cache.layers) == config.num_hidden_layers
    for layer in cache.layers:
        assert tuple(layer.keys.shape) == expected and tuple(layer.values.shape) == expected


def test_head_dim_is_the_derived_width_and_follows_edits():
    config = GPTConfig(hidden_size=32, num_attention_heads=4)
    assert config.head_dim == 8 and isinstance(config.head_dim, int)
    assert GPTConfig().head_dim == 64  # GPT-2 small: 768 / 12
    config.update_from_string("hidden_size=64,num_attention_heads=2")  # run_pretraining's --config_overrides
    assert config.head_dim == 32
    config.num_attention_heads = 8
    assert config.head_dim == 8
    GPTLMHeadModel(GPTConfig(**{**TINY, "hidden_size": 64, "num_attention_heads": 8}))  # builds


def test_head_dim_is_saved_and_loads_back(tmp_path):
    model = tiny_lm(True)
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["head_dim"] == 16
    assert AutoConfig.from_pretrained(tmp_path).head_dim == 16
    # A size given on load after the saved head_dim: the width follows it (transformers sets such
    # kwargs after construction).
    reloaded = AutoConfig.from_pretrained(tmp_path, num_attention_heads=4)
    assert reloaded.head_dim == 8
    GPTLMHeadModel(reloaded)


def test_head_dim_other_than_the_derived_width_is_refused():
    config = GPTConfig(**{**TINY, "head_dim": 8})  # 32 / 2 heads = 16
    assert config.head_dim == 8  # kept as given ...
    with pytest.raises(ValueError, match=r"head_dim must be hidden_size // num_attention_heads = 16, got head_dim=8"):
        GPTLMHeadModel(config)  # ... and refused where the model is built
    with pytest.raises(ValueError, match=r"hidden_size \(30\) must be divisible by num_attention_heads \(4\)"):
        GPTLMHeadModel(GPTConfig(**{**TINY, "hidden_size": 30, "num_attention_heads": 4}))


@GENERATIONS
def test_past_key_values_format(pre_layer_norm):
    model = tiny_lm(pre_layer_norm)
    inputs = prompt()
    out = model(**inputs, use_cache=True)
    assert_cache_shape(out.past_key_values, model.config, batch=2, cached_length=PROMPT_LENGTH)


@GENERATIONS
def test_greedy_generate_dict_outputs_use_cache(pre_layer_norm):
    model = tiny_lm(pre_layer_norm)
    out = model.generate(
        **prompt(),
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        do_sample=False,
        use_cache=True,
        return_dict_in_generate=True,
        output_scores=True,
    )
    assert out.sequences.shape == (2, PROMPT_LENGTH + NEW_TOKENS)
    # The last generated token is never fed back: the cache holds every position before it.
    assert_cache_shape(out.past_key_values, model.config, batch=2, cached_length=PROMPT_LENGTH + NEW_TOKENS - 1)


@GENERATIONS
def test_beam_search_generate_dict_outputs_use_cache(pre_layer_norm):
    model = tiny_lm(pre_layer_norm)
    beams = 2
    out = model.generate(
        **prompt(),
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        num_beams=beams,
        num_return_sequences=beams,
        do_sample=False,
        use_cache=True,
        return_dict_in_generate=True,
        output_scores=True,
    )
    assert out.sequences.shape == (2 * beams, PROMPT_LENGTH + NEW_TOKENS)
    assert_cache_shape(out.past_key_values, model.config, batch=2 * beams, cached_length=PROMPT_LENGTH + NEW_TOKENS - 1)


def greedy_and_assisted(model: GPTLMHeadModel, assistant: GPTLMHeadModel):
    inputs = prompt(batch=1)  # transformers' assisted decoding takes one sequence
    common = dict(
        max_new_tokens=NEW_TOKENS + 2,
        min_new_tokens=NEW_TOKENS + 2,
        do_sample=False,
        use_cache=True,
        return_dict_in_generate=True,
        output_scores=True,
    )
    greedy = model.generate(**inputs, **common)
    assistant.generation_config.num_assistant_tokens = 2  # several candidates per step, some rejected
    assistant.generation_config.num_assistant_tokens_schedule = "constant"
    assisted = model.generate(**inputs, assistant_model=assistant, **common)
    return greedy, assisted


@GENERATIONS
@pytest.mark.parametrize("assistant_kind", ["random", "same"])
def test_assisted_decoding_matches_greedy_search(pre_layer_norm, assistant_kind):
    model = tiny_lm(pre_layer_norm)
    # "random": another tiny GPT of the same generation with its own weights (its guesses are
    # mostly rejected); "same": the model as its own assistant (every guess accepted).
    assistant = tiny_lm(pre_layer_norm, seed=5, num_hidden_layers=1) if assistant_kind == "random" else model
    greedy, assisted = greedy_and_assisted(model, assistant)
    assert torch.equal(assisted.sequences, greedy.sequences)
    for ours, reference in zip(assisted.scores, greedy.scores, strict=True):
        torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-5)
    cached = greedy.sequences.shape[1] - 1
    assert_cache_shape(greedy.past_key_values, model.config, batch=1, cached_length=cached)
    assert_cache_shape(assisted.past_key_values, model.config, batch=1, cached_length=cached)


@GENERATIONS
def test_assisted_decoding_sample(pre_layer_norm):
    model = tiny_lm(pre_layer_norm)
    assistant = tiny_lm(pre_layer_norm, seed=5, num_hidden_layers=1)
    assistant.generation_config.num_assistant_tokens = 2
    assistant.generation_config.num_assistant_tokens_schedule = "constant"
    torch.manual_seed(3)
    out = model.generate(
        **prompt(batch=1),
        assistant_model=assistant,
        do_sample=True,
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        use_cache=True,
        return_dict_in_generate=True,
        output_scores=True,
    )
    assert out.sequences.shape == (1, PROMPT_LENGTH + NEW_TOKENS)
    assert len(out.scores) == NEW_TOKENS
    assert_cache_shape(out.past_key_values, model.config, batch=1, cached_length=PROMPT_LENGTH + NEW_TOKENS - 1)


def test_remote_code_config_has_head_dim_and_the_head_lists_generation_mixin(tmp_path):
    """The checkpoint's own code (trust_remote_code, hf_variants not importable): the config's
    head_dim is the width, GenerationMixin is a direct base of the loaded head, and generate()'s
    cache has the shape the config announces."""
    tiny_lm(True).save_pretrained(tmp_path)
    script = f"""
import importlib.abc, json, sys, torch
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "hf_variants":
            raise ImportError("hf_variants must not be needed")
sys.meta_path.insert(0, Block())
from transformers import AutoModelForCausalLM, GenerationMixin
model = AutoModelForCausalLM.from_pretrained({str(tmp_path)!r}, trust_remote_code=True).eval()
out = model.generate(torch.randint(3, 99, (2, 7)), max_new_tokens=3, min_new_tokens=3, do_sample=False,
                     return_dict_in_generate=True)
print(json.dumps({{"head_dim": model.config.head_dim, "direct_base": GenerationMixin in type(model).__bases__,
                  "cache": [list(layer.keys.shape) for layer in out.past_key_values.layers]}}))
"""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {"head_dim": 16, "direct_base": True, "cache": [[2, 2, 9, 16]] * TINY["num_hidden_layers"]}
