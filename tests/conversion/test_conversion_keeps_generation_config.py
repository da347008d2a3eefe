"""Conversion keeps the generation config a model generates with (issue 29, item 5).

A MarianMTModel's config has ``forced_eos_token_id=0`` by default and released checkpoints add
``bad_words_ids`` / ``num_beams`` / ``max_length`` in generation_config.json. ``from_transformers``,
``to_transformers`` and ``from_pretrained(<folder saved by transformers>)`` must carry all of it, so
default ``generate()`` gives the tokens the source model gives.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from transformers import AutoModelForSeq2SeqLM
from transformers.generation.configuration_utils import METADATA_FIELDS

import hf_variants
from hf_variants import from_transformers, to_transformers
from hf_variants.models.transformer import TransformerForConditionalGeneration

VOCAB, PAD, EOS = 99, 98, 0
# What generate() reads beyond the model config, as a released OPUS-MT checkpoint's
# generation_config.json sets it (bad_words_ids: never emit padding), sized for a tiny model.
CHECKPOINT_GENERATION = dict(bad_words_ids=[[PAD]], max_length=12, num_beams=3)


def marian(seed: int = 1) -> transformers.MarianMTModel:
    """A random tiny MarianMTModel with MarianConfig's generation defaults (eos 0, forced_eos_token_id 0)."""
    torch.manual_seed(seed)
    config = transformers.MarianConfig(
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=37,
        decoder_ffn_dim=37,
        max_position_embeddings=64,
        activation_function="relu",
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.3,
        scale_embedding=True,
        pad_token_id=PAD,
        decoder_start_token_id=PAD,
    )
    assert config.forced_eos_token_id == EOS and config.eos_token_id == EOS  # transformers' defaults, kept
    return transformers.MarianMTModel(config).eval()


def generation_fields(model: transformers.PreTrainedModel) -> dict:
    """The generation config as generate() reads it (bookkeeping fields such as the version left out)."""
    return {k: v for k, v in model.generation_config.to_dict().items() if k not in METADATA_FIELDS}


def sources() -> torch.Tensor:
    return torch.randint(1, PAD, (2, 7), generator=torch.Generator().manual_seed(1))


def assert_same_default_generation(theirs, ours, greedy_only: bool = False) -> None:
    """Default generate() (the model's own generation config) gives the same tokens, greedy and 3 beams."""
    ids = sources()
    for options in [{"num_beams": 1}] + ([] if greedy_only else [{"num_beams": 3}]):
        with torch.no_grad():
            expected = theirs.generate(ids, **options)
            got = ours.generate(ids, **options)
        # The test is sensitive to the carried fields: the last position is the forced </s>.
        assert expected.shape[1] == theirs.generation_config.max_length and bool((expected[:, -1] == EOS).all())
        assert len(set(expected[:, 1:-1].flatten().tolist())) >= 3  # not one repeated token: the cache is exercised
        assert torch.equal(got, expected), options


def with_checkpoint_generation(model):
    for name, value in CHECKPOINT_GENERATION.items():
        setattr(model.generation_config, name, value)
    return model


def test_from_transformers_keeps_marians_generation_config():
    theirs = with_checkpoint_generation(marian())
    ours = from_transformers(theirs)
    assert type(ours) is TransformerForConditionalGeneration
    assert ours.generation_config.forced_eos_token_id == EOS
    assert generation_fields(ours) == generation_fields(theirs)
    # A model built from the translated config alone would lose them: what conversion must add.
    rebuilt = TransformerForConditionalGeneration(ours.config)
    assert rebuilt.generation_config.forced_eos_token_id is None and rebuilt.generation_config.num_beams in (None, 1)


def test_to_transformers_gives_marian_our_generation_config():
    ours = from_transformers(marian())
    ours.generation_config.num_beams = 2
    ours.generation_config.no_repeat_ngram_size = 3
    back = to_transformers(ours)
    assert type(back) is transformers.MarianMTModel
    assert generation_fields(back) == generation_fields(ours)
    assert back.generation_config.forced_eos_token_id == EOS and back.generation_config.num_beams == 2


@pytest.mark.parametrize("generation_json", [True, False], ids=["generation_config.json", "config.json only"])
def test_from_pretrained_of_a_marian_folder_keeps_its_generation_config(generation_json, tmp_path):
    """transformers' loading reads the folder's generation_config.json (or, for folders older than
    it, the generation fields of config.json) into our model: ours ends with what transformers'
    own class loads from the folder, directly and through the Auto class, and keeps it when
    saved in our format and reloaded."""
    theirs = with_checkpoint_generation(marian())
    theirs.save_pretrained(tmp_path / "theirs")
    if not generation_json:
        (tmp_path / "theirs" / "generation_config.json").unlink()
    reference = transformers.MarianMTModel.from_pretrained(tmp_path / "theirs")
    assert reference.generation_config.forced_eos_token_id == EOS
    ours = TransformerForConditionalGeneration.from_pretrained(tmp_path / "theirs")
    auto = hf_variants.load_pretrained(str(tmp_path / "theirs"), AutoModelForSeq2SeqLM)
    assert generation_fields(ours) == generation_fields(auto) == generation_fields(reference)
    assert (ours.generation_config.num_beams == 3) == generation_json
    ours.save_pretrained(tmp_path / "ours")
    again = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "ours")
    assert type(again) is TransformerForConditionalGeneration
    assert generation_fields(again) == generation_fields(reference)


@pytest.mark.parametrize(
    "checkpoint_generation", [False, True], ids=["marian-defaults", "checkpoint-generation-config"]
)
def test_converted_marian_generates_marians_tokens_with_default_arguments(checkpoint_generation):
    theirs = marian()
    theirs.generation_config.max_length = 12  # short enough for a test; the forced </s> lands inside it
    if checkpoint_generation:
        with_checkpoint_generation(theirs)
    ours = from_transformers(theirs).eval()
    assert_same_default_generation(theirs, ours)
    back = to_transformers(ours).eval()
    assert_same_default_generation(theirs, back)


def test_folder_saved_by_transformers_generates_marians_tokens(tmp_path):
    theirs = with_checkpoint_generation(marian())
    theirs.save_pretrained(tmp_path)
    ours = TransformerForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert_same_default_generation(theirs, ours)


@pytest.mark.parametrize("their_class", ["GPT2LMHeadModel", "T5ForConditionalGeneration"])
def test_every_generating_pair_carries_the_generation_config(their_class):
    """The same for the other generating families (the carry is in the shared conversion)."""
    if their_class == "GPT2LMHeadModel":
        config = transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=1, eos_token_id=2
        )
    else:
        config = transformers.T5Config(
            vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, decoder_start_token_id=0
        )
    theirs = getattr(transformers, their_class)(config)
    theirs.generation_config.update(num_beams=2, repetition_penalty=1.3, max_length=9)
    ours = from_transformers(theirs)
    assert generation_fields(ours) == generation_fields(theirs)
    assert generation_fields(to_transformers(ours)) == generation_fields(theirs)
