"""Special token ids outside the vocabulary (issue 29, item 5).

transformers' ``GPT2Config`` keeps bos/eos 50256 whatever ``vocab_size`` is, and transformers builds
``GPT2Config(vocab_size=99, ...)``: the usual tiny test model. It converts to ours and back as
transformers builds it; an id outside the vocabulary is refused (ValueError naming it) only where
it would be looked up: generate() starting from it or writing it, decoder inputs built from labels,
ids in ``input_ids``, and the padding row of the variants whose word table has one (at build,
as transformers' BERT). Every variant's config is treated the same way.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from transformers import AutoModelForCausalLM

import hf_variants
from hf_variants import from_transformers, to_transformers
from hf_variants.registry import SPECS
from tests.ecosystem.variant_cases import tiny_config

OUTSIDE = 50256  # GPT-2's <|endoftext|>, transformers' default bos/eos of GPT2Config


def gpt2_with_default_ids(seed: int = 0) -> transformers.GPT2LMHeadModel:
    """GPT2Config with transformers' defaults for everything but the sizes (bos/eos 50256, no pad);
    the wide init gives peaked next-token distributions (no near-ties between greedy choices)."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4, initializer_range=0.3)
    assert (config.bos_token_id, config.eos_token_id, config.pad_token_id) == (OUTSIDE, OUTSIDE, None)
    return transformers.GPT2LMHeadModel(config).eval()


def prompts() -> torch.Tensor:
    return torch.randint(0, 99, (1, 6), generator=torch.Generator().manual_seed(1))


def test_gpt2_config_with_default_ids_converts_both_ways_and_loads_from_its_folder(tmp_path):
    theirs = gpt2_with_default_ids()
    ours = from_transformers(theirs).eval()
    assert type(ours) is hf_variants.GPTLMHeadModel
    assert (ours.config.bos_token_id, ours.config.eos_token_id, ours.config.vocab_size) == (OUTSIDE, OUTSIDE, 99)
    ids = prompts()
    with torch.no_grad():
        expected = theirs(ids).logits
        torch.testing.assert_close(ours(ids).logits, expected, atol=1e-5, rtol=0)
        back = to_transformers(ours).eval()
        assert type(back) is transformers.GPT2LMHeadModel and back.config.bos_token_id == OUTSIDE
        torch.testing.assert_close(back(ids).logits, expected, atol=1e-5, rtol=0)
    theirs.save_pretrained(tmp_path)
    for loaded in (
        hf_variants.GPTLMHeadModel.from_pretrained(tmp_path),
        hf_variants.load_pretrained(str(tmp_path), AutoModelForCausalLM),
    ):
        assert type(loaded) is hf_variants.GPTLMHeadModel and loaded.config.eos_token_id == OUTSIDE
        with torch.no_grad():
            torch.testing.assert_close(loaded.eval()(ids).logits, expected, atol=1e-5, rtol=0)
    # A model built from our own config with those ids, as transformers' class builds it.
    assert hf_variants.GPTLMHeadModel(ours.config).config.bos_token_id == OUTSIDE


@pytest.mark.parametrize("num_beams", [1, 3])
def test_default_generate_gives_their_tokens(num_beams):
    """eos 50256 can never be generated: both run to the length limit with the same tokens."""
    theirs = gpt2_with_default_ids()
    ours = from_transformers(theirs).eval()
    with torch.no_grad():
        expected = theirs.generate(prompts(), max_new_tokens=8, num_beams=num_beams)
        assert expected.shape[1] == 6 + 8 and len(set(expected[0, 6:].tolist())) >= 3
        assert torch.equal(ours.generate(prompts(), max_new_tokens=8, num_beams=num_beams), expected)


def test_ids_outside_the_vocabulary_are_refused_where_they_are_used():
    theirs = gpt2_with_default_ids()
    ours = from_transformers(theirs).eval()
    with pytest.raises(IndexError):  # transformers' own model: an IndexError from inside the embedding
        theirs.generate(max_new_tokens=2)
    with pytest.raises(
        ValueError,
        match=r"bos_token_id 50256 is outside the vocabulary \(vocab_size=99\): generate\(\) "
        r"was given no input_ids",
    ):
        ours.generate(max_new_tokens=2)
    # A sequence that can end (eos 3, in the vocabulary) is padded after its end with pad_token_id.
    with pytest.raises(ValueError, match=r"pad_token_id 50256 is outside the vocabulary \(vocab_size=99\)"):
        ours.generate(prompts(), max_new_tokens=2, eos_token_id=3, pad_token_id=OUTSIDE)
    ours.generation_config.pad_token_id = OUTSIDE
    with pytest.raises(ValueError, match="pad_token_id 50256 is outside the vocabulary"):
        ours.generate(prompts(), max_new_tokens=2, eos_token_id=3)
    ours.generate(prompts(), max_new_tokens=2, eos_token_id=3, pad_token_id=0)  # a pad id inside it is used
    with pytest.raises(ValueError, match=r"input_ids contains id 50256, outside the valid range \[0, 99\)"):
        ours(torch.tensor([[5, OUTSIDE]]))


def _generating_heads() -> list:
    return [
        pytest.param(spec, head, id=f"{spec.name}-{head}")
        for spec in SPECS.values()
        for head, cls in spec.classes.items()
        if cls.can_generate()
    ]


def _text_variants() -> list:
    return [
        pytest.param(spec, id=spec.name)
        for spec in SPECS.values()
        if "vocab_size" in {f for f in spec.config_class.__dataclass_fields__} and spec.name != "vit"
    ]


@pytest.mark.parametrize("spec", _text_variants())
def test_every_variant_builds_with_bos_eos_outside_and_refuses_pad_only_where_its_table_has_a_padding_row(spec):
    """One rule for every config: bos / eos / decoder start are never looked up at build, so a config
    naming them outside the vocabulary builds; pad is looked up at build by the variants whose word
    table keeps a padding row (as in transformers: BERT, RoBERTa, Marian ... but not GPT-2, T5,
    XLNet, Transformer-XL), which refuse it by name."""
    names = {
        f
        for f in spec.config_class.__dataclass_fields__
        if f in ("bos_token_id", "eos_token_id", "decoder_start_token_id")
    }
    head = next(iter(spec.classes))
    config = tiny_config(spec, **dict.fromkeys(names, OUTSIDE))
    model = spec.classes[head](config)
    assert all(getattr(model.config, name) == OUTSIDE for name in names)
    has_padding_row = (
        getattr(spec.classes[head](tiny_config(spec, pad_token_id=0)).get_input_embeddings(), "padding_idx", None)
        is not None
    )
    if has_padding_row:
        # (RoBERTa's positions count from the padding index: its own check names pad_token_id first.)
        message = (
            "pad_token_id"
            if spec.name == "roberta"
            else r"pad_token_id 50256 is outside the vocabulary \(vocab_size=99\): it is the padding row"
        )
        with pytest.raises(ValueError, match=message):
            spec.classes[head](tiny_config(spec, pad_token_id=OUTSIDE))
    else:
        assert spec.classes[head](tiny_config(spec, pad_token_id=OUTSIDE)).config.pad_token_id == OUTSIDE
    assert has_padding_row == (spec.name in ("albert", "bert", "electra", "roberta", "spanbert", "transformer", "xlm"))


@pytest.mark.parametrize("spec,head", _generating_heads())
def test_every_generating_head_refuses_the_start_token_outside_the_vocabulary(spec, head):
    model = spec.classes[head](tiny_config(spec)).eval()
    if model.config.is_encoder_decoder:
        model.generation_config.decoder_start_token_id = OUTSIDE
        with pytest.raises(
            ValueError, match=r"decoder_start_token_id 50256 is outside the vocabulary .*starts the decoder"
        ):
            model.generate(torch.tensor([[4, 5, 6]]), max_new_tokens=2)
        model.config.decoder_start_token_id = OUTSIDE
        labels = torch.tensor([[4, 5, -100]])
        with pytest.raises(
            ValueError, match=r"decoder_start_token_id 50256 is outside the vocabulary .*built from the labels"
        ):
            model(torch.tensor([[4, 5, 6]]), labels=labels)
    else:
        model.generation_config.bos_token_id = OUTSIDE
        with pytest.raises(ValueError, match=r"bos_token_id 50256 is outside the vocabulary .*no input_ids"):
            model.generate(max_new_tokens=2)
