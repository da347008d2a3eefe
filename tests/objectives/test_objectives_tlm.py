"""XLM translation LM: positions restart at the second sentence, language ids per half, masking
in both halves, the Hub translation format, transformers' XLMWithLMHeadModel takes the batch.

Real parallel text is not reachable offline, so the pairs here are built, and labelled, as what
they are: a real Austen sentence ("en") and the same sentence written letter by letter in
Cyrillic ("en-Cyrl", a deterministic transliteration, not a translation). The tokens of the two
halves differ while the content corresponds position by position, which is what TLM's inputs
need to be tested; no claim about cross-lingual learning rests on them.
"""

from __future__ import annotations

import functools

import datasets
import numpy as np
import pytest
import torch

from hf_variants.data import split_sentences
from hf_variants.objectives import DataCollatorForTranslationLM, SpecialTokenTemplate, build_tlm_example, tlm_dataset
from tests.common.austen_data import austen_corpus, austen_tokenizer

LATIN = "abcdefghijklmnopqrstuvwxyz"
CYRILLIC = "абцдефгхийклмнопярстужвьыз"  # one distinct letter per Latin letter
TRANSLITERATE = str.maketrans(LATIN + LATIN.upper(), CYRILLIC + CYRILLIC.upper())
LANG2ID = {"en": 0, "en-Cyrl": 1}


@functools.lru_cache(maxsize=None)
def sentence_pairs(count: int = 400) -> datasets.Dataset:
    """Real Austen sentences and their transliterations, in the Hub's translation format."""
    sentences = [s for text in austen_corpus()["text"][200:800] for s in split_sentences(text) if len(s) > 20]
    assert len(sentences) >= count
    return datasets.Dataset.from_dict(
        {"translation": [{"en": s, "en-Cyrl": s.translate(TRANSLITERATE)} for s in sentences[:count]]}
    )


def test_build_example_positions_restart_and_languages():
    tokenizer = austen_tokenizer()
    pair = sentence_pairs()[0]["translation"]
    first = tokenizer(pair["en"], add_special_tokens=False)["input_ids"]
    second = tokenizer(pair["en-Cyrl"], add_special_tokens=False)["input_ids"]
    # Different scripts: no Latin letter in the second half's tokens, and no [UNK] in either.
    assert not any(char in LATIN for token in tokenizer.convert_ids_to_tokens(second) for char in token)
    assert tokenizer.unk_token_id not in first + second
    example = build_tlm_example(first, second, 0, 1, SpecialTokenTemplate(tokenizer))
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert example["input_ids"] == [cls, *first, sep, cls, *second, sep]
    n_first = len(first) + 2
    assert example["position_ids"] == list(range(n_first)) + list(range(len(second) + 2))
    assert example["langs"] == [0] * n_first + [1] * (len(second) + 2)
    assert example["special_tokens_mask"] == [1] + [0] * len(first) + [1, 1] + [0] * len(second) + [1]
    # max_length trims the longer sentence from its end.
    short = build_tlm_example(first, second, 0, 1, SpecialTokenTemplate(tokenizer), max_length=20)
    assert len(short["input_ids"]) == 20
    assert short["position_ids"].index(0, 1) == short["langs"].index(1)


def test_collator_masks_both_halves_and_keeps_positions_and_languages():
    tokenizer = austen_tokenizer()
    rows = tlm_dataset(sentence_pairs(), tokenizer, "en", "en-Cyrl", LANG2ID, max_length=128)
    collator = DataCollatorForTranslationLM(tokenizer, seed=0)
    masked = {0: 0, 1: 0}
    candidates = {0: 0, 1: 0}
    for start in range(0, len(rows), 32):
        features = [rows[k] for k in range(start, min(start + 32, len(rows)))]
        batch = collator(features)
        assert set(batch) == {"input_ids", "attention_mask", "labels", "langs", "position_ids"}
        for row, feature in enumerate(features):
            length = len(feature["input_ids"])
            assert batch["position_ids"][row, :length].tolist() == feature["position_ids"]
            assert batch["langs"][row, :length].tolist() == feature["langs"]
            assert int(batch["attention_mask"][row].sum()) == length
            labels = batch["labels"][row, :length].numpy()
            special = np.array(feature["special_tokens_mask"], dtype=bool)
            assert (labels[special] == -100).all()
            assert (batch["input_ids"][row, :length].numpy()[special] == np.array(feature["input_ids"])[special]).all()
            langs = np.array(feature["langs"])
            for lang in (0, 1):
                masked[lang] += int(((labels != -100) & (langs == lang)).sum())
                candidates[lang] += int((~special & (langs == lang)).sum())
    for lang in (0, 1):  # each half carries its share of the 15%
        assert candidates[lang] > 5000
        assert abs(masked[lang] / candidates[lang] - 0.15) < 0.015


def test_hub_format_rows_equal_the_builder():
    tokenizer = austen_tokenizer()
    pairs = sentence_pairs()
    rows = tlm_dataset(pairs, tokenizer, "en-Cyrl", "en", LANG2ID, max_length=64)
    template = SpecialTokenTemplate(tokenizer)
    for k in (0, 7, 99):
        pair = pairs[k]["translation"]
        expected = build_tlm_example(
            tokenizer(pair["en-Cyrl"], add_special_tokens=False)["input_ids"],
            tokenizer(pair["en"], add_special_tokens=False)["input_ids"],
            1,
            0,
            template,
            64,
        )
        assert rows[k] == expected
    assert max(len(ids) for ids in rows["input_ids"]) <= 64


def test_transformers_xlm_takes_the_batch():
    from transformers import XLMConfig, XLMWithLMHeadModel

    tokenizer = austen_tokenizer()
    rows = tlm_dataset(sentence_pairs(), tokenizer, "en", "en-Cyrl", LANG2ID, max_length=64)
    batch = DataCollatorForTranslationLM(tokenizer, seed=0)([rows[k] for k in range(4)])
    config = XLMConfig(
        vocab_size=len(tokenizer),
        emb_dim=32,
        n_layers=2,
        n_heads=2,
        n_langs=2,
        use_lang_emb=True,
        max_position_embeddings=64,
        pad_index=tokenizer.pad_token_id,
        lang2id=LANG2ID,
    )
    model = XLMWithLMHeadModel(config).eval()
    loss = model(**batch).loss
    assert torch.isfinite(loss)
    # The language ids reach the model: changing them changes the loss.
    flipped = dict(batch, langs=1 - batch["langs"])
    assert not torch.allclose(model(**flipped).loss, loss)


def test_bad_inputs():
    tokenizer = austen_tokenizer()
    template = SpecialTokenTemplate(tokenizer)
    with pytest.raises(ValueError, match="at least one token"):
        build_tlm_example([], [5], 0, 1, template)
    with pytest.raises(ValueError, match="max_length"):
        build_tlm_example([5, 6], [7, 8], 0, 1, template, max_length=5)
    with pytest.raises(ValueError, match="lang2id"):
        tlm_dataset(sentence_pairs(), tokenizer, "en", "fr", LANG2ID)
    with pytest.raises(ValueError, match="translation"):
        tlm_dataset(sentence_pairs().rename_column("translation", "pairs"), tokenizer, "en", "en-Cyrl", LANG2ID)
    with pytest.raises(ValueError, match="langs"):
        DataCollatorForTranslationLM(tokenizer)([{"input_ids": [2, 5, 3]}])


def test_trainer_takes_the_collator(tmp_path):
    from test_objectives_plm import train_two_steps
    from transformers import XLMConfig, XLMWithLMHeadModel

    tokenizer = austen_tokenizer()
    rows = tlm_dataset(sentence_pairs(), tokenizer, "en", "en-Cyrl", LANG2ID, max_length=64)
    config = XLMConfig(
        vocab_size=len(tokenizer),
        emb_dim=32,
        n_layers=2,
        n_heads=2,
        n_langs=2,
        use_lang_emb=True,
        max_position_embeddings=64,
        pad_index=tokenizer.pad_token_id,
        lang2id=LANG2ID,
    )
    losses = train_two_steps(
        XLMWithLMHeadModel(config),
        [rows[k] for k in range(8)],
        DataCollatorForTranslationLM(tokenizer, seed=0),
        tmp_path,
    )
    assert len(losses) == 2 and all(np.isfinite(losses))
