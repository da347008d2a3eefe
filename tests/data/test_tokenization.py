"""Tokenizer training: every kind round-trips through save_pretrained / AutoTokenizer with its
special tokens, mask token, pair template and word ids (trained on real Austen paragraphs)."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from hf_variants.tokenization import TOKENIZER_KINDS, train_tokenizer, word_start_table
from tests.common.austen_data import austen_corpus

TEXT_A = "Mr. Darcy's behaviour was astonishing; Elizabeth could hardly believe it."
TEXT_B = "Her sister smiled."

EXPECTED = {
    # kind: (pad, unk, cls, sep, mask, ids of pad..mask, token_type_ids of B)
    "wordpiece-uncased": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", [0, 1, 2, 3, 4], 1),
    "wordpiece-cased": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", [0, 1, 2, 3, 4], 1),
    "bpe": ("<pad>", "<unk>", "<s>", "</s>", "<mask>", [1, 3, 0, 2, 4], 0),
    "unigram": ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", [0, 1, 2, 3, 4], 1),
    "unigram-xlnet": ("<pad>", "<unk>", "<cls>", "<sep>", "<mask>", [5, 0, 3, 4, 6], 1),  # the released ids
}


@pytest.mark.parametrize("kind", TOKENIZER_KINDS)
def test_round_trip_special_tokens_and_templates(kind, tmp_path):
    tokenizer = train_tokenizer(kind, austen_corpus()["text"][:1000], 1000)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    pad, unk, cls, sep, mask, ids, second_type = EXPECTED[kind]
    assert (loaded.pad_token, loaded.unk_token, loaded.cls_token, loaded.sep_token, loaded.mask_token) == (
        pad,
        unk,
        cls,
        sep,
        mask,
    )
    assert [
        loaded.pad_token_id,
        loaded.unk_token_id,
        loaded.cls_token_id,
        loaded.sep_token_id,
        loaded.mask_token_id,
    ] == ids
    assert len(loaded) == len(tokenizer) <= 1000

    pair = loaded(TEXT_A, TEXT_B)
    assert pair["input_ids"] == tokenizer(TEXT_A, TEXT_B)["input_ids"]
    a = loaded(TEXT_A, add_special_tokens=False)["input_ids"]
    b = loaded(TEXT_B, add_special_tokens=False)["input_ids"]
    cls_last = kind == "unigram-xlnet"
    if kind == "bpe":  # RoBERTa: <s> A </s></s> B </s>, no segment ids
        assert pair["input_ids"] == [0, *a, 2, 2, *b, 2]
        assert "token_type_ids" not in pair
    elif cls_last:  # XLNet: A <sep> B <sep> <cls>, segments 0, 1 and 2 for <cls>; padded on the left
        assert pair["input_ids"] == [*a, loaded.sep_token_id, *b, loaded.sep_token_id, loaded.cls_token_id]
        assert pair["token_type_ids"] == [0] * (len(a) + 1) + [second_type] * (len(b) + 1) + [2]
        assert loaded.padding_side == "left" and (loaded.bos_token, loaded.eos_token) == ("<s>", "</s>")
        assert loaded.convert_tokens_to_ids(["<s>", "</s>", "<eod>", "<eop>"]) == [1, 2, 7, 8]
        padded = loaded([TEXT_B, TEXT_A], padding=True)
        assert padded["input_ids"][0][0] == loaded.pad_token_id and padded["attention_mask"][0][-1] == 1
        assert "Élise" not in loaded.decode(loaded("Élise")["input_ids"], skip_special_tokens=True)  # accents stripped
        assert "Elizabeth" in loaded.decode(loaded("Elizabeth")["input_ids"], skip_special_tokens=True)  # cased
    else:  # BERT / ALBERT: [CLS] A [SEP] B [SEP], segment ids 0 then 1
        assert pair["input_ids"] == [loaded.cls_token_id, *a, loaded.sep_token_id, *b, loaded.sep_token_id]
        assert pair["token_type_ids"] == [0] * (len(a) + 2) + [second_type] * (len(b) + 1)
    single = loaded(TEXT_A)["input_ids"]
    if cls_last:
        assert single[-2:] == [loaded.sep_token_id, loaded.cls_token_id]
    else:
        assert single[0] == loaded.cls_token_id and single[-1] == loaded.sep_token_id

    # The mask token is recognised in text and decodes back.
    masked = loaded(f"It was {loaded.mask_token} indeed.", add_special_tokens=False)["input_ids"]
    assert masked.count(loaded.mask_token_id) == 1
    # word_ids() works (whole-word masking needs it) and agrees with the vocabulary's word starts.
    encoding = loaded(TEXT_A)
    word_ids = encoding.word_ids()
    assert word_ids[-1] is None and max(w for w in word_ids if w is not None) >= 9
    assert word_ids[-2] is None if cls_last else word_ids[0] is None
    table = word_start_table(loaded)
    # The text's positions after its first token (XLNet: no special token in front, two behind).
    inner = range(1, len(encoding["input_ids"]) - 2) if cls_last else range(2, len(encoding["input_ids"]) - 1)
    new_word = [word_ids[p] != word_ids[p - 1] for p in inner]
    vocab_start = [table[encoding["input_ids"][p]] for p in inner]
    if kind.startswith("wordpiece"):  # "##" pieces are exactly the within-word pieces
        assert vocab_start == new_word
    else:  # a space-marked piece always starts a pre-tokenizer word ("'s" is a word of its own there)
        assert all(n for n, v in zip(new_word, vocab_start) if v)
        assert sum(vocab_start) >= 8


def test_casing_and_bad_arguments():
    paragraphs = austen_corpus()["text"][:800]
    cased = train_tokenizer("wordpiece-cased", paragraphs, 800)
    uncased = train_tokenizer("wordpiece-uncased", paragraphs, 800)
    assert "Elizabeth" in cased.decode(cased("Elizabeth")["input_ids"], skip_special_tokens=True)
    assert uncased.decode(uncased("Elizabeth")["input_ids"], skip_special_tokens=True) == "elizabeth"
    with pytest.raises(ValueError, match="unknown tokenizer kind"):
        train_tokenizer("sentencepiece", paragraphs, 800)
    with pytest.raises(ValueError, match="too small"):
        train_tokenizer("bpe", paragraphs, 10)
    with pytest.raises(ValueError, match="expects strings"):
        train_tokenizer("bpe", [1, 2, 3], 500)
    with pytest.raises(ValueError, match="empty vocabulary"):
        train_tokenizer("wordpiece-uncased", ["   ", ""], 500)
