"""Issue 43: transformers' generation tests on XLMWithLMHeadModel (greedy / sample / beam /
beam-sample dict outputs) found no per-step attentions or hidden states (``[False, False, False]
!= [True, True, True]``), and ``test_prepare_inputs_for_generation_kwargs_forwards`` found
``prepare_inputs_for_generation`` dropping the keywords it does not know. Here both against
transformers' XLMWithLMHeadModel on the same weights."""

from __future__ import annotations

import pytest
import torch

import hf_variants
from hf_variants import XLMConfig, XLMWithLMHeadModel

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=64,
    pad_token_id=2,
    bos_token_id=0,
    eos_token_id=1,
    summary_first_dropout=0.0,
)
BATCH, PROMPT_LENGTH, NEW_TOKENS = 2, 5, 3
MODES = {
    "greedy": dict(do_sample=False),
    "sample": dict(do_sample=True, top_k=0),
    "beam_search": dict(do_sample=False, num_beams=2, num_return_sequences=2),
    "beam_sample": dict(do_sample=True, top_k=0, num_beams=2, num_return_sequences=2),
}


def pair(n_langs: int):
    torch.manual_seed(0)
    ours = XLMWithLMHeadModel(XLMConfig(**TINY, n_langs=n_langs, lang_id=n_langs - 1, mask_token_id=5)).eval()
    return ours, hf_variants.to_transformers(ours).eval()


def prompt() -> torch.Tensor:
    return torch.randint(6, TINY["vocab_size"], (BATCH, PROMPT_LENGTH), generator=torch.Generator().manual_seed(1))


def dict_generate(model, mode: str, **extra):
    torch.manual_seed(7)  # the same draws for both models (sampling modes)
    # The pad id is never generated: without an attention mask XLM finds padding by the pad id, and
    # transformers counts pad ids and hides that many *trailing* positions (ours hides the pad
    # token itself): a pad id sampled mid-sequence is not what these tests compare.
    return model.generate(
        prompt(),
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        eos_token_id=None,
        suppress_tokens=[TINY["pad_token_id"]],
        return_dict_in_generate=True,
        output_scores=True,
        output_attentions=True,
        output_hidden_states=True,
        **MODES[mode],
        **extra,
    )


@pytest.mark.parametrize("n_langs", [1, 3])
@pytest.mark.parametrize("mode", list(MODES))
def test_dict_outputs_hold_each_steps_attentions_and_hidden_states_as_transformers(mode, n_langs):
    ours, theirs = pair(n_langs)
    # use_cache=False as transformers' *_dict_output(s) tests: every step re-encodes the sequence
    # with the mask token appended (the XLM way), so the step's maps are (T + 1) x (T + 1).
    mine, reference = dict_generate(ours, mode, use_cache=False), dict_generate(theirs, mode, use_cache=False)
    assert torch.equal(mine.sequences, reference.sequences)
    rows = BATCH * MODES[mode].get("num_beams", 1)
    assert len(mine.attentions) == len(mine.hidden_states) == NEW_TOKENS
    for step, (attentions, states, their_attentions, their_states) in enumerate(
        zip(mine.attentions, mine.hidden_states, reference.attentions, reference.hidden_states, strict=True)
    ):
        length = PROMPT_LENGTH + step + 1  # the sequence so far plus the appended mask token
        assert isinstance(attentions, tuple) and len(attentions) == TINY["num_hidden_layers"]
        assert isinstance(states, tuple) and len(states) == TINY["num_hidden_layers"] + 1
        for ours_map, their_map in zip(attentions, their_attentions, strict=True):
            assert ours_map.shape == (rows, TINY["num_attention_heads"], length, length)
            torch.testing.assert_close(ours_map, their_map, rtol=1e-5, atol=1e-5)
        for ours_state, their_state in zip(states, their_states, strict=True):
            assert ours_state.shape == (rows, length, TINY["hidden_size"])
            torch.testing.assert_close(ours_state, their_state, rtol=1e-5, atol=1e-5)
    for ours_scores, their_scores in zip(mine.scores, reference.scores, strict=True):
        torch.testing.assert_close(ours_scores, their_scores, rtol=1e-5, atol=1e-5)


def test_dict_outputs_with_the_default_cache_setting_still_hold_every_step():
    """generate()'s default use_cache=True: the cache it creates is not read (each step re-encodes
    the sequence), so the steps' attentions and tokens are those of use_cache=False."""
    ours, _ = pair(3)
    default, uncached = dict_generate(ours, "greedy"), dict_generate(ours, "greedy", use_cache=False)
    assert torch.equal(default.sequences, uncached.sequences)
    for step_maps, uncached_maps in zip(default.attentions, uncached.attentions, strict=True):
        for ours_map, reference in zip(step_maps, uncached_maps, strict=True):
            torch.testing.assert_close(ours_map, reference, rtol=1e-6, atol=1e-6)


def test_prepare_inputs_for_generation_forwards_unknown_keywords_as_transformers():
    ours, theirs = pair(3)
    ids = torch.tensor([[10, 11, 12], [13, 14, 15]])
    arbitrary = {"output_attentions": True, "output_hidden_states": True, "custom_arg": "test_value", "numeric_arg": 42}
    rebuilt = {
        "attention_mask": torch.ones_like(ids),
        "position_ids": torch.arange(3).expand(2, 3),
        "token_type_ids": torch.zeros_like(ids),
    }
    mine = ours.prepare_inputs_for_generation(ids, **arbitrary, **rebuilt)
    reference = theirs.prepare_inputs_for_generation(ids, **arbitrary, **rebuilt)
    for key, value in arbitrary.items():
        assert mine[key] == value == reference[key]
    for key in rebuilt:  # rebuilt at each step from the sequence so far, as transformers' XLM does
        assert key not in mine and key not in reference
    assert torch.equal(mine["input_ids"], reference["input_ids"])  # the mask token appended
    assert torch.equal(mine["langs"], reference["langs"])
    # The forwarded flags reach the model: one step's output holds the maps.
    step = ours(**{key: value for key, value in mine.items() if key not in ("custom_arg", "numeric_arg")})
    assert (
        len(step.attentions) == TINY["num_hidden_layers"] and len(step.hidden_states) == TINY["num_hidden_layers"] + 1
    )
