"""The sequence-to-sequence scripts end to end on real data, with tiny models and a few steps:
run_translation (the Transformer on CMU-dictionary grapheme-to-phoneme pairs), run_pretraining
with T5's span corruption, then run_seq2seq (text-to-text sentiment) from that checkpoint. Each
run's loss falls, the generated predictions are written, and the scores in all_results.json are
the ones recomputed here from those predictions. Bad arguments give a ValueError naming them.

The runs are far too short to learn the tasks (the README has the measured results); they show
that data, tokenizer, model, loss, generation and scoring are wired together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_variants  # noqa: F401  (registers the model types)
from hf_variants.data import load_cmudict, load_rt_polarity, load_wsj_pos
from hf_variants.metrics import sequence_scores
from hf_variants.models.named_configs import named_config
from tests.common.example_scripts import load_example_script as load_script

RUN_OPTIONS = [
    "--save_strategy",
    "no",
    "--seed",
    "0",
    "--report_to",
    "none",
    "--use_cpu",
    "--disable_tqdm",
    "true",
    "--logging_steps",
    "2",
]


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def assert_loss_falls(output_dir: Path, window: int = 3) -> None:
    losses = [entry["loss"] for entry in read_json(output_dir / "trainer_state.json")["log_history"] if "loss" in entry]
    assert len(losses) >= 2 * window, losses
    first, last = sum(losses[:window]) / window, sum(losses[-window:]) / window
    assert last < 0.85 * first, f"loss did not fall: first {first:.3f}, last {last:.3f} ({losses})"


def assert_predictions_scored(output_dir: Path, references: list[str], results: dict) -> list[str]:
    """generated_predictions.txt has one line per test row, and the predict_* scores are those lines'."""
    predictions = (output_dir / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(predictions) == len(references)
    recomputed = sequence_scores(predictions, references)
    assert results["predict_exact_match"] == pytest.approx(recomputed["exact_match"])
    assert results["predict_token_error_rate"] == pytest.approx(recomputed["token_error_rate"])
    return predictions


def tiny_config_folder(folder: Path, name: str) -> str:
    """A modeling_configs/ flavour shrunk to hidden 32, 2 + 2 layers (passed as --config_name)."""
    config = named_config(
        name, hidden_size=32, num_hidden_layers=2, decoder_layers=2, num_attention_heads=2, intermediate_size=64
    )
    config.save_pretrained(folder)
    return str(folder)


def test_translation_trains_the_transformer_on_grapheme_to_phoneme_pairs(tmp_path):
    output_dir = tmp_path / "g2p"
    results = load_script("run_translation").main([
        "--model_name_or_path", "transformer-mini", "--config_name", tiny_config_folder(tmp_path / "tiny", "transformer-mini"),
        "--dataset_name", "hf_variants/cmudict", "--source_lang", "graphemes", "--target_lang", "phonemes",
        "--do_train", "--do_eval", "--do_predict", "--predict_with_generate", "--num_beams", "2",
        "--max_train_samples", "64", "--max_eval_samples", "12", "--max_predict_samples", "12", "--vocab_size", "300",
        "--num_train_epochs", "6", "--per_device_train_batch_size", "16", "--learning_rate", "3e-3",
        "--output_dir", str(output_dir)] + RUN_OPTIONS)  # fmt: skip
    assert_loss_falls(output_dir)
    for key in ("eval_exact_match", "eval_token_error_rate", "eval_gen_len", "predict_exact_match", "train_loss"):
        assert key in results, key
    assert read_json(output_dir / "all_results.json")["predict_token_error_rate"] == results["predict_token_error_rate"]
    references = load_cmudict()["test"]["phonemes"][:12]
    assert_predictions_scored(output_dir, references, results)

    # The saved model and the tokenizer trained on the pairs reload and generate through the Auto classes.
    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir)
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    assert model.config.model_type == "hfv_transformer" and model.config.hidden_size == 32
    assert model.config.vocab_size == len(tokenizer) and model.config.label_smoothing == 0.1
    generated = model.generate(**tokenizer(["phoneme"], return_tensors="pt"), max_new_tokens=8, num_beams=2)
    assert generated.shape[0] == 1


# T5's optimiser, as the README's runs (the scaling is honoured by our Trainer: tests/ecosystem/test_adafactor_optim_args.py).
ADAFACTOR = ["--optim", "adafactor", "--optim_args", "scale_parameter=True"]


def test_span_corruption_pretraining_then_text_to_text_sentiment(tmp_path):
    pretrained = tmp_path / "t5-pretrained"
    results = load_script("run_pretraining").main([
        "--model_name_or_path", "t5-mini", "--corpus", "austen", "--max_documents", "12", "--vocab_size", "500",
        "--max_seq_length", "32", "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "32",
        "--max_steps", "24", "--learning_rate", "1e-2", "--warmup_steps", "0.1", "--output_dir", str(pretrained),
        ] + ADAFACTOR + RUN_OPTIONS)  # fmt: skip
    assert results["objective"] == "span-corruption"  # T5's, from its spec
    before, after = results["before_training"], results["after_training"]
    assert after["mlm_loss"] < before["mlm_loss"] - 0.3
    tokenizer = AutoTokenizer.from_pretrained(pretrained)
    assert "<extra_id_0>" in tokenizer.get_vocab() and tokenizer.eos_token == "</s>"  # the unigram-t5 tokenizer
    assert AutoModelForSeq2SeqLM.from_pretrained(pretrained).config.vocab_size == len(tokenizer)

    # Fine-tune it text-to-text: the review in, the word "positive" or "negative" out.
    reviews = load_rt_polarity()
    output_dir = tmp_path / "sentiment"
    results = load_script("run_seq2seq").main([
        "--model_name_or_path", str(pretrained), "--dataset_name", "hf_variants/rt_polarity", "--source_prefix", "sentiment: ",
        "--do_train", "--do_eval", "--do_predict", "--predict_with_generate", "--max_source_length", "48",
        "--max_target_length", "4", "--max_train_samples", "48", "--max_eval_samples", "16", "--max_predict_samples", "16",
        "--num_train_epochs", "10", "--per_device_train_batch_size", "16", "--learning_rate", "5e-3",
        "--output_dir", str(output_dir)] + ADAFACTOR + RUN_OPTIONS)  # fmt: skip
    assert_loss_falls(output_dir, window=2)
    assert 0 <= results["eval_exact_match"] <= 100
    names = reviews["test"].features["label"].names
    assert_predictions_scored(output_dir, [names[label] for label in reviews["test"]["label"][:16]], results)
    assert read_json(output_dir / "config.json")["model_type"] == "hfv_t5"


def test_target_columns_are_written_as_words():
    run_seq2seq = load_script("run_seq2seq")
    tagged = load_wsj_pos()["train"].select(range(2))
    sources, targets = run_seq2seq.column_pairs("tokens", "pos_tags")(tagged, "train")
    tag_names = tagged.features["pos_tags"].feature.names
    assert sources[0] == " ".join(tagged[0]["tokens"])
    assert targets[0].split() == [tag_names[tag] for tag in tagged[0]["pos_tags"]]
    reviews = load_rt_polarity()["validation"].select(range(4))
    assert run_seq2seq.column_as_text(reviews, "label") == [
        ("negative", "positive")[label] for label in reviews["label"]
    ]


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("script", "arguments", "message"), [
    ("run_translation", ["--target_lang", "phonemes"], "--source_lang is required"),
    ("run_translation", ["--source_lang", "graphemes", "--target_lang", "graphemes"], "--source_lang and --target_lang"),
    ("run_translation", ["--source_lang", "graphemes", "--target_lang", "phonemes", "--num_beams", "0"], "--num_beams"),
    ("run_translation", ["--source_lang", "graphemes", "--target_lang", "phonemes", "--max_source_length", "0"],
     "--max_source_length"),
    ("run_translation", ["--source_lang", "graphemes", "--target_lang", "ipa"], "--target_lang 'ipa' is not a key"),
    ("run_seq2seq", ["--text_column", "word", "--target_column", "spelling"], "needs columns"),
    ("run_seq2seq", ["--optim", "adafactor", "--optim_args", "relative_step=True"], "relative_step.*scale_parameter"),
])  # fmt: skip
def test_argument_errors_name_the_argument(tmp_path, script, arguments, message):
    common = [
        "--model_name_or_path",
        "transformer-mini",
        "--dataset_name",
        "hf_variants/cmudict",
        "--do_train",
        "--output_dir",
        str(tmp_path / "out"),
    ]
    with pytest.raises(ValueError, match=message):
        load_script(script).main(common + arguments + RUN_OPTIONS)


def test_local_files_need_columns_and_non_empty_targets(tmp_path):
    run_seq2seq = load_script("run_seq2seq")
    train_file = write_jsonl(
        tmp_path / "train.jsonl", [{"text": "a fine film", "target": "positive"}, {"text": "dull", "target": ""}]
    )
    common = [
        "--model_name_or_path",
        "t5-mini",
        "--train_file",
        train_file,
        "--do_train",
        "--output_dir",
        str(tmp_path / "out"),
    ] + RUN_OPTIONS
    with pytest.raises(ValueError, match="--text_column is required"):
        run_seq2seq.main(common)
    with pytest.raises(
        ValueError,
        match=r"train split: 1 rows have an empty or non-text source or target, e.g. \['.*train\.jsonl, line 2'\]",
    ):
        run_seq2seq.main(common + ["--text_column", "text", "--target_column", "target"])


@pytest.mark.parametrize(("arguments", "message"), [
    (["--masking", "static"], "--masking static stores MLM masks; objective span-corruption"),
    (["--objective", "span-corruption+nsp"], "has no sentence task"),
    (["--optim", "adafactor", "--optim_args", "scale_parameter=yes"], "scale_parameter='yes': expected true or false"),
])  # fmt: skip
def test_span_corruption_pretraining_argument_errors(tmp_path, arguments, message):
    with pytest.raises(ValueError, match=message):
        load_script("run_pretraining").main(
            ["--model_name_or_path", "t5-mini", "--corpus", "austen", "--output_dir", str(tmp_path / "out")]
            + arguments
            + RUN_OPTIONS
        )
