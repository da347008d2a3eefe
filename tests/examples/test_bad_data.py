"""Bad data files given to the example scripts: each failure mode, on files in the formats users
give (json lines, csv, tsv, BERT's pretraining text) built from the real offline data sets, is a
ValueError naming the file and the line, raised before any model is built or trained.

The checks live in one place (hf_variants/data/data_files.py, reached through
examples_support.load_raw_datasets / require_columns / label_names and run_pretraining's
read_text_file); the tests drive the scripts' own ``main`` so the wiring is tested too.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from pathlib import Path

import pytest
from test_examples_processing import MINILM, common_args, load_script, shuffled_rows

from hf_variants.data import corpus_text_file, load_named_dataset
from hf_variants.data.data_files import scan_data_file

SENTIMENT = ("negative", "positive")
TEXT_MODEL = ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM]


@pytest.fixture(scope="module")
def reviews() -> list[dict]:
    """24 real movie-review sentences (rt-polarity) as users' rows: sentence + label name."""
    rows = shuffled_rows(load_named_dataset("hf_variants/rt_polarity")["train"], 24)
    return [{"sentence": row["sentence"], "label": SENTIMENT[row["label"]]} for row in rows]


@pytest.fixture(scope="module")
def tweets() -> list[dict]:
    """12 real tweets of WNUT-16 with their tags as names."""
    split = load_named_dataset("hf_variants/wnut16")["train"]
    names = split.features["ner_tags"].feature.names
    return [
        {"tokens": row["tokens"], "ner_tags": [names[tag] for tag in row["ner_tags"]]}
        for row in split.select(range(12))
    ]


def json_lines(path: Path, rows: list[dict], replace: dict[int, bytes] | None = None) -> str:
    """``rows`` as JSON lines; ``replace`` maps a 1-based line number to the raw bytes written instead."""
    lines = [json.dumps(row).encode() for row in rows]
    for number, raw in (replace or {}).items():
        lines[number - 1] = raw
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return str(path)


def csv_file(path: Path, rows: list[dict], delimiter: str = ",") -> str:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def run_glue(tmp_path: Path, train: str, validation: str | None = None, extra: tuple[str, ...] = ()):
    files = ["--train_file", train] + (["--validation_file", validation, "--do_eval"] if validation else [])
    return load_script("run_glue").main(TEXT_MODEL + files + ["--do_train", *extra] + common_args(tmp_path / "out"))


def names_file_and_line(path: str, line: int) -> str:
    return re.escape(f"{path}, line {line}")


# ------------------------------------------------------------------------------ file-level


def test_a_byte_that_is_not_utf8_names_the_line_and_column(tmp_path, reviews):
    latin1 = json.dumps(
        {"sentence": "un film trop long, d\u00e9cevant", "label": "negative"}, ensure_ascii=False
    ).encode("latin-1")
    train = json_lines(tmp_path / "train.jsonl", reviews, replace={5: latin1})
    column = latin1.index(b"\xe9") + 1
    with pytest.raises(
        ValueError, match=names_file_and_line(train, 5) + rf": not UTF-8 text \(byte 0xe9 at column {column}\)"
    ):
        run_glue(tmp_path, train)


def test_malformed_json_line_names_the_line(tmp_path, reviews):
    cut = json.dumps(reviews[6]).encode()[:-9]  # a line cut short, as by an interrupted export
    train = json_lines(tmp_path / "train.jsonl", reviews, replace={7: cut})
    with pytest.raises(ValueError, match=names_file_and_line(train, 7) + r": malformed JSON \(.*column"):
        run_glue(tmp_path, train)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_empty_file(tmp_path, content, suffix):
    path = tmp_path / f"train{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}: the file is empty")):
        run_glue(tmp_path, str(path))


def test_csv_with_a_header_and_no_rows(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("sentence,label\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}: a header ['sentence', 'label'] but no rows")):
        run_glue(tmp_path, str(path))


def test_json_line_missing_a_column_names_the_line_and_key(tmp_path, reviews):
    rows = [*reviews[:9], {"sentence": reviews[9]["sentence"]}, *reviews[10:]]  # line 10 lost its label
    train = json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(
        ValueError, match=names_file_and_line(train, 10) + r": keys \['sentence'\] .*missing \['label'\]"
    ):
        run_glue(tmp_path, train)


def test_a_column_missing_from_the_whole_file_is_named(tmp_path, reviews):
    train = json_lines(tmp_path / "train.jsonl", reviews)
    stars = json_lines(
        tmp_path / "validation.jsonl", [{"sentence": row["sentence"], "stars": 4} for row in reviews[:4]]
    )
    with pytest.raises(
        ValueError,
        match=r"validation sequence classification needs columns \['sentence', 'label'\].*missing: \['label'\]",
    ):
        run_glue(tmp_path, train, stars)


def test_csv_row_with_an_unquoted_comma_names_the_line(tmp_path, reviews):
    path = Path(csv_file(tmp_path / "train.csv", reviews))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[4] = "a fine, moving film,positive"  # line 5: the comma in the text is not quoted
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=names_file_and_line(str(path), 5) + r": 3 fields, but the header \(line 1\) has 2.*quoted"
    ):
        run_glue(tmp_path, str(path))


def test_line_numbers_count_quoted_newlines_in_csv(tmp_path, reviews):
    """A quoted text spanning two lines: the rows after it are still named by their real line."""
    rows = [dict(reviews[0], sentence="first line\nsecond line"), *reviews[1:4], {"sentence": "", "label": "positive"}]
    path = csv_file(tmp_path / "train.csv", rows)
    assert scan_data_file(path).lines == (2, 4, 5, 6, 7)
    with pytest.raises(
        ValueError, match=r"column 'sentence' must hold a non-empty text.*" + names_file_and_line(path, 7)
    ):
        run_glue(tmp_path, path)


# ------------------------------------------------------------------------------ values


def test_null_text_names_the_line(tmp_path, reviews):
    rows = [*reviews[:2], {"sentence": None, "label": "positive"}, *reviews[3:]]
    train = json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(
        ValueError,
        match=r"train sequence classification: column 'sentence' must hold a non-empty text "
        r"in every row; " + names_file_and_line(train, 3) + ": None",
    ):
        run_glue(tmp_path, train)


def test_empty_label_field_in_tsv_names_the_line(tmp_path, reviews):
    rows = [*reviews[:11], {"sentence": reviews[11]["sentence"], "label": ""}, *reviews[12:]]
    train = csv_file(tmp_path / "train.tsv", rows, delimiter="\t")
    with pytest.raises(ValueError, match=r"column 'label' has no label at \[" + re.escape(f"'{train}, line 13'")):
        run_glue(tmp_path, train)


def test_label_unseen_in_training_names_the_file_and_line(tmp_path, reviews):
    train = json_lines(tmp_path / "train.jsonl", reviews)
    validation = json_lines(tmp_path / "validation.jsonl", [*reviews[:3], {"sentence": "so-so", "label": "neutral"}])
    with pytest.raises(
        ValueError,
        match=r"validation split, column 'label': labels \['neutral'\] .*unseen in training.*"
        + names_file_and_line(validation, 4),
    ):
        run_glue(tmp_path, train, validation)


def test_too_few_tags_for_the_words_names_the_line(tmp_path, tweets):
    rows = [*tweets[:3], dict(tweets[3], ner_tags=tweets[3]["ner_tags"][:-2]), *tweets[4:]]
    train = json_lines(tmp_path / "train.jsonl", rows)
    words = len(tweets[3]["tokens"])
    with pytest.raises(
        ValueError,
        match=rf"'ner_tags' needs one tag per word of 'tokens'; \(words, tags\) \[\({words}, {words - 2}\)\] at "
        + re.escape(f"['{train}, line 4']"),
    ):
        load_script("run_ner").main(TEXT_MODEL + ["--train_file", train, "--do_train"] + common_args(tmp_path / "out"))


def test_ner_words_not_a_list_names_the_line(tmp_path, tweets):
    rows = [
        *tweets[:5],
        dict(tweets[5], tokens=" ".join(tweets[5]["tokens"])),
        *tweets[6:],
    ]  # a string, not split into words
    train = json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(
        ValueError, match=r"column 'tokens' must hold a non-empty list of words.*" + names_file_and_line(train, 6)
    ):
        load_script("run_ner").main(TEXT_MODEL + ["--train_file", train, "--do_train"] + common_args(tmp_path / "out"))


def test_qa_context_missing_names_the_line(tmp_path):
    rows = load_named_dataset("hf_variants/real_text_qa")["train"].select(range(6)).to_list()
    rows[2]["context"] = None
    train = json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(
        ValueError,
        match=r"column 'context' must hold a non-empty text.*"
        + names_file_and_line(train, 3)
        + r" \(id '"
        + re.escape(rows[2]["id"]),
    ):
        load_script("run_qa").main(TEXT_MODEL + ["--train_file", train, "--do_train"] + common_args(tmp_path / "out"))


def test_multiple_choice_label_out_of_range_names_the_line(tmp_path, reviews):
    rows = [
        {
            "sent1": reviews[i]["sentence"],
            "sent2": "Then",
            "ending0": reviews[i + 1]["sentence"],
            "ending1": reviews[i + 2]["sentence"],
            "label": i % 2,
        }
        for i in range(8)
    ]
    rows[5]["label"] = 2  # only two endings
    train = json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(
        ValueError, match=r"labels must be ending indices in \[0, 2\).*" + names_file_and_line(train, 6)
    ):
        load_script("run_swag").main(TEXT_MODEL + ["--train_file", train, "--do_train"] + common_args(tmp_path / "out"))


def test_seq2seq_empty_target_names_the_line(tmp_path):
    pairs = load_named_dataset("hf_variants/cmudict")["train"].select(range(8)).to_list()
    rows = [{"word": row["word"], "phonemes": row["phonemes"]} for row in pairs]
    rows[6]["phonemes"] = "   "
    train = json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(ValueError, match=r"empty or non-text source or target.*" + names_file_and_line(train, 7)):
        load_script("run_seq2seq").main(
            [
                "--model_name_or_path",
                "t5-mini",
                "--train_file",
                train,
                "--do_train",
                "--text_column",
                "word",
                "--target_column",
                "phonemes",
            ]
            + common_args(tmp_path / "out")
        )


# ------------------------------------------------------------------------------ pretraining text


def test_pretraining_text_not_utf8_names_the_line(tmp_path):
    paragraphs = Path(corpus_text_file("austen")).read_text(encoding="utf-8").splitlines()[:40]
    raw = "\n".join(paragraphs).encode("utf-8").split(b"\n")
    raw[30] = raw[30] + " na\u00efve".encode("latin-1")
    path = tmp_path / "austen.txt"
    path.write_bytes(b"\n".join(raw) + b"\n")
    with pytest.raises(ValueError, match=re.escape(f"--train_file {path}, line 31: not UTF-8 text (byte 0xef")):
        load_script("run_pretraining").main(
            [
                "--model_name_or_path",
                "bert-tiny",
                "--train_file",
                str(path),
                "--output_dir",
                str(tmp_path / "out"),
                "--use_cpu",
                "--report_to",
                "none",
            ]
        )
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"--train_file {empty}: the file is empty")):
        load_script("run_clm").main(
            [
                "--model_name_or_path",
                "gpt2-mini",
                "--train_file",
                str(empty),
                "--output_dir",
                str(tmp_path / "clm"),
                "--use_cpu",
                "--report_to",
                "none",
            ]
        )


# ------------------------------------------------------------------------------ over-long texts


def test_over_long_texts_are_truncated_and_counted_once_in_the_log(tmp_path, reviews, caplog):
    """Fine-tuning truncates at --max_seq_length (what users expect) and says how many, once per split."""
    train = json_lines(tmp_path / "train.jsonl", reviews[:8])
    tokenizer = load_script("examples_support").load_tokenizer(load_script("examples_support").ModelArguments(MINILM))
    longer = sum(len(tokenizer(row["sentence"])["input_ids"]) > 12 for row in reviews[:8])
    assert 0 < longer < 8
    with caplog.at_level(logging.WARNING, logger="hf_variants.examples"):
        run_glue(tmp_path, train, extra=("--max_seq_length", "12", "--max_steps", "1"))
    messages = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert messages == [f"train: {longer} of 8 inputs are longer than --max_seq_length 12 tokens and are truncated"]


# ------------------------------------------------------------------------------ images


@pytest.mark.parametrize("script", ["run_image_classification", "run_mae"])
def test_truncated_image_file_is_named_before_training(tmp_path, script):
    """A PNG cut short (an interrupted copy) in a --train_dir class folder: named by its path, not
    an OSError from PIL halfway through an epoch."""
    from test_examples_image_classification import write_image_folder

    train_dir = write_image_folder(tmp_path / "train", load_named_dataset("hf_variants/digits")["train"], per_class=2)
    broken = sorted(train_dir.glob("3/*.png"))[0]
    broken.write_bytes(broken.read_bytes()[:60])
    with pytest.raises(
        ValueError, match=r"train .*: 1 images in column 'image' cannot be read: " + re.escape(str(broken))
    ):
        load_script(script).main(
            [
                "--model_name_or_path",
                "vit-mini",
                "--train_dir",
                str(train_dir),
                "--do_train",
                "--output_dir",
                str(tmp_path / "out"),
                "--use_cpu",
                "--report_to",
                "none",
            ]
        )


def test_regression_target_missing_names_the_line(tmp_path):
    """Fine-grained sentiment (rt-polarity's mean ratings) as regression: an empty rating in the csv."""
    rows = shuffled_rows(load_named_dataset("hf_variants/rt_polarity")["train"], 10)
    rows = [{"sentence": row["sentence"], "label": row["rating"]} for row in rows]
    path = Path(csv_file(tmp_path / "train.csv", rows))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[8] = lines[8].rsplit(",", 1)[0] + ","  # line 9: the rating cut off
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"regression targets must be finite numbers; \[None\] at \[" + re.escape(f"'{path}, line 9'")
    ):
        run_glue(tmp_path, str(path))
