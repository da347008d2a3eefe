"""generate()'s cache hand-over, every generating head, on the installed transformers release.

transformers 5.24 renamed the cache it passes to ``forward`` (``past_key_values`` -> ``cache``); our
heads dropped it in ``**kwargs`` and each step recomputed from the last token alone: wrong tokens
for the commonest call (one prompt, no padding, no attention mask) and no error. These tests hold
the contract on whichever release is installed (``make test`` runs the locked one, ``make
test-latest`` the newest): batch-1 unpadded prompts give transformers' tokens (greedy and 3 beams),
cached equals uncached, every step after the first really reads the cache, and a cache that does
not belong to the inputs is refused with a ValueError.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from transformers import DynamicCache

import hf_variants
from hf_variants.modules.cache import CACHE_FIELD, output_cache

VOCAB = 99
# Wide initialisations give peaked next-token distributions (no near-ties between greedy or beam
# choices); no EOS, so every call runs all its steps. A random model's greedy text soon loops on one
# token, where a cache bug could give the same loop: no_repeat_ngram_size=2 (a logits processor,
# the same on both sides) keeps every continuation moving, so wrong logits show as other tokens.
WIDE = 0.3
VARIED = dict(do_sample=False, no_repeat_ngram_size=2)


def _gpt2():
    return transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=VOCAB,
            n_positions=64,
            n_embd=32,
            n_layer=2,
            n_head=4,
            bos_token_id=1,
            eos_token_id=None,
            pad_token_id=0,
            initializer_range=WIDE,
        )
    )


def _gpt1():
    return transformers.OpenAIGPTLMHeadModel(
        transformers.OpenAIGPTConfig(
            vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4, initializer_range=WIDE
        )
    )


def _xlnet():
    return transformers.XLNetLMHeadModel(
        transformers.XLNetConfig(
            vocab_size=VOCAB,
            d_model=32,
            n_layer=2,
            n_head=4,
            d_inner=64,
            mem_len=None,
            bos_token_id=1,
            eos_token_id=None,
            pad_token_id=0,
            initializer_range=WIDE,
        )
    )


def _t5(version: str):
    extra = dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False) if version == "v1.1" else {}
    return transformers.T5ForConditionalGeneration(
        transformers.T5Config(
            vocab_size=VOCAB,
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            decoder_start_token_id=0,
            pad_token_id=0,
            eos_token_id=None,
            initializer_factor=4.0,
            **extra,
        )
    )


def _marian():
    return transformers.MarianMTModel(
        transformers.MarianConfig(
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
            pad_token_id=0,
            eos_token_id=None,
            decoder_start_token_id=0,
            forced_eos_token_id=None,
            init_std=WIDE,
        )
    )


# Every generating head that transformers also has, built as transformers builds it.
THEIRS = {
    "gpt2": _gpt2,
    "openai-gpt": _gpt1,
    "xlnet": _xlnet,
    "t5-v1.0": lambda: _t5("v1.0"),
    "t5-v1.1": lambda: _t5("v1.1"),
    "marian": _marian,
}
ENCODER_DECODERS = ("t5-v1.0", "t5-v1.1", "marian")


def pair(name: str):
    torch.manual_seed(sum(map(ord, name)))
    theirs = THEIRS[name]().eval()
    return hf_variants.from_transformers(theirs).eval(), theirs


def prompt(length: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(3, VOCAB, (1, length), generator=torch.Generator().manual_seed(seed))


def transfo_xl():
    torch.manual_seed(0)
    config = hf_variants.TransfoXLConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_attention_heads=4,
        head_dim=8,
        intermediate_size=64,
        num_hidden_layers=2,
        mem_len=32,
        initializer_range=WIDE,
    )
    return hf_variants.TransfoXLLMHeadModel(config).eval()


@pytest.mark.parametrize("length", [1, 5, 12])
@pytest.mark.parametrize("name", list(THEIRS))
def test_unpadded_single_prompt_gives_their_tokens(name, length):
    ours, theirs = pair(name)
    ids = prompt(length, seed=length)
    for options in (VARIED, dict(VARIED, num_beams=3)):
        expected = theirs.generate(ids, max_new_tokens=10, **options)
        got = ours.generate(ids, max_new_tokens=10, **options)
        assert torch.equal(got, expected), (name, options)
    assert len(set(expected[0, -10:].tolist())) >= 2  # a real continuation, not one repeated token


@pytest.mark.parametrize("name", [*THEIRS, "transfo-xl"])
def test_cached_generation_equals_uncached(name):
    model = transfo_xl() if name == "transfo-xl" else pair(name)[0]
    ids = prompt(7, seed=3)
    for options in (VARIED, dict(VARIED, num_beams=3)):
        cached = model.generate(ids, max_new_tokens=10, use_cache=True, **options)
        assert torch.equal(cached, model.generate(ids, max_new_tokens=10, use_cache=False, **options)), options
    assert len(set(cached[0, -10:].tolist())) >= 2  # a real continuation, not one repeated token


@pytest.mark.parametrize("name", [*THEIRS, "transfo-xl"])
def test_every_step_after_the_first_reads_the_cache(name):
    """The bug was silent: generate() handed a cache that forward never read. Each call after the
    first must receive the state the previous call returned, and feed only the new tokens."""
    model = transfo_xl() if name == "transfo-xl" else pair(name)[0]
    memory_model = name in ("xlnet", "transfo-xl")
    calls = []

    def record(module, args, kwargs, output):
        received = kwargs.get("mems") if memory_model else kwargs.get("cache", kwargs.get("past_key_values"))
        returned = output.mems if memory_model else getattr(output, CACHE_FIELD)
        ids = kwargs.get("decoder_input_ids") if name in ENCODER_DECODERS else kwargs.get("input_ids")
        # the length now: a Cache is extended in place by later calls
        length = returned[0].shape[0] if memory_model else returned.get_seq_length()
        calls.append((received, returned, length, ids.shape[1]))

    handle = model.register_forward_hook(record, with_kwargs=True)
    try:
        model.generate(prompt(6, seed=4), max_new_tokens=5, **VARIED)
    finally:
        handle.remove()
    assert len(calls) == 5
    # tokens fed after the first step: one (a key/value cache or Transformer-XL's mems); XLNet
    # recomputes the last two tokens and a dummy target slot over its mems
    fed_per_step = model.GENERATION_OVERLAP + 1 if name == "xlnet" else 1
    first_length = 1 if name in ENCODER_DECODERS else 6  # the decoder starts from its start token
    for step, (received, _, length, fed) in enumerate(calls[1:], start=1):
        _, previous, previous_length = calls[step - 1][:3]
        assert received is not None, f"step {step} got no cache"
        if memory_model:
            # the previous step's memories (XLNet's minus the recomputed overlap), not fresh ones
            assert all(torch.equal(old[: new.shape[0]], new) for old, new in zip(previous, received))
        else:
            assert received is previous  # the Cache the previous call returned, extended in place
        if name != "xlnet":  # XLNet's memory keeps everything but the overlap: its length does not grow by one
            assert length == previous_length + 1 == first_length + step
        assert fed == fed_per_step, f"step {step} fed {fed} tokens"


def test_a_cache_that_does_not_belong_to_the_inputs_is_refused():
    ours, _ = pair("gpt2")
    ids = prompt(5)
    cache = output_cache(ours(ids, use_cache=True))
    step = prompt(1, seed=9)
    with pytest.raises(ValueError, match="cache_position starts at 3 but the cache holds 5 positions"):
        ours(step, cache=cache, cache_position=torch.tensor([3]))
    with pytest.raises(ValueError, match="the cache holds 1 rows but the inputs have 2"):
        ours(step.repeat(2, 1), cache=cache)
    with pytest.raises(ValueError, match="pass the cache once"):
        ours(step, cache=cache, past_key_values=cache)
    with pytest.raises(ValueError, match="cache_params is not a cache this model can use"):
        ours(step, cache_params=cache)
    with pytest.raises(ValueError, match=r"attention_mask has shape \(1, 3\), expected \(1, 6\)"):
        ours(step, cache=cache, attention_mask=torch.ones(1, 3, dtype=torch.long))
    # Both names are read: the right cache under either gives the same next-token logits.
    fresh = DynamicCache()
    ours(ids, past_key_values=fresh, use_cache=True)
    by_old_name = ours(step, past_key_values=fresh).logits
    again = DynamicCache()
    ours(ids, cache=again, use_cache=True)
    torch.testing.assert_close(ours(step, cache=again).logits, by_old_name, atol=0, rtol=0)
    full = ours(torch.cat([ids, step], dim=1)).logits[:, -1:]
    torch.testing.assert_close(by_old_name, full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["xlnet", "transfo-xl"])
def test_memory_models_refuse_a_key_value_cache(name):
    model = transfo_xl() if name == "transfo-xl" else pair(name)[0]
    # transformers >= 5.24 refuses it itself (cache= is no argument of theirs), earlier releases reach ours
    with pytest.raises(ValueError, match="generates over its segment memories|model_kwargs. are not used by the model"):
        model.generate(prompt(4), max_new_tokens=2, do_sample=False, past_key_values=DynamicCache())
