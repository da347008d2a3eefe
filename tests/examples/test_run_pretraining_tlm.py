"""examples/run_pretraining.py with XLM's translation LM on real parallel text (Django's English
interface strings and their French translations): the rows are TLM rows, a few steps lower the
held-out masked-token loss, and the language ids land in the saved config."""

from __future__ import annotations

import pytest
from test_run_pretraining import load_script
from transformers import AutoConfig

from hf_variants.training.pretraining_data import load_dataset_corpus

TLM = [
    "--model_name_or_path",
    "xlm-mini",
    "--objective",
    "tlm",
    "--corpus",
    "django-en-fr",
    "--vocab_size",
    "600",
    "--max_seq_length",
    "64",
    "--per_device_train_batch_size",
    "16",
    "--per_device_eval_batch_size",
    "64",
    "--learning_rate",
    "2e-3",
    "--warmup_steps",
    "0.1",
    "--logging_steps",
    "4",
    "--seed",
    "0",
    "--save_strategy",
    "no",
    "--disable_tqdm",
    "true",
    "--validation_fraction",
    "0.1",
]


def test_tlm_pretraining_loss_falls_and_languages_are_saved(tmp_path):
    script = load_script()
    results = script.main(TLM + ["--max_steps", "15", "--output_dir", str(tmp_path)])
    before, after = results["before_training"], results["after_training"]
    assert results["objective"] == "tlm" and results["global_step"] == 15 and results["input_format"] == "tlm rows"
    assert after["mlm_loss"] < before["mlm_loss"] - 0.5
    config = AutoConfig.from_pretrained(tmp_path)
    assert config.lang2id == {"en": 0, "fr": 1}


def test_tlm_refuses_plain_text_static_masks_and_models_without_languages(tmp_path):
    script = load_script()
    with pytest.raises(ValueError, match="need a parallel corpus"):
        script.main([*TLM[:4], "--corpus", "austen", *TLM[6:], "--max_steps", "1", "--output_dir", str(tmp_path)])
    with pytest.raises(ValueError, match="draws its targets per batch"):
        script.main(TLM + ["--masking", "static", "--max_steps", "1", "--output_dir", str(tmp_path)])
    with pytest.raises(ValueError, match="language embeddings"):
        script.main(["--model_name_or_path", "bert-tiny", *TLM[2:], "--max_steps", "1", "--output_dir", str(tmp_path)])
    with pytest.raises(ValueError, match="no sentence task"):
        script.main([*TLM[:2], "--objective", "tlm+sop", *TLM[4:], "--max_steps", "1", "--output_dir", str(tmp_path)])


def write_dataset_folder(folder, rows: list[dict]) -> str:
    """A local dataset folder (one train.jsonl): datasets.load_dataset reads it as it reads a Hub id."""
    import json

    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(folder)


def test_tlm_reads_translation_rows_from_a_dataset(tmp_path):
    """--dataset_name takes the Hub's translation format (opus_books, wmt16): here the same real
    Django pairs written as a local dataset folder, so the held-out split and languages match."""
    from hf_variants.data import load_django_translations

    pairs = [{"translation": row} for row in load_django_translations()["translation"]]
    folder = write_dataset_folder(tmp_path / "pairs", pairs)
    script = load_script()
    arguments = [*TLM[:4], "--dataset_name", folder, *TLM[6:], "--max_steps", "2"]
    results = script.main(arguments + ["--output_dir", str(tmp_path / "out")])
    assert results["objective"] == "tlm" and results["global_step"] == 2
    assert AutoConfig.from_pretrained(tmp_path / "out").lang2id == {"en": 0, "fr": 1}

    broken = write_dataset_folder(tmp_path / "broken", pairs[:5] + [{"translation": {"en": "File", "de": "Datei"}}])
    with pytest.raises(ValueError, match=r"row 5 has .*'de'.*expected \['en', 'fr'\]"):
        script.main(
            [*TLM[:4], "--dataset_name", broken, *TLM[6:], "--max_steps", "1", "--output_dir", str(tmp_path / "b")]
        )
    with pytest.raises(ValueError, match="exactly one of --corpus, --train_file, --dataset_name"):
        script.main(TLM + ["--dataset_name", folder, "--max_steps", "1", "--output_dir", str(tmp_path / "c")])


def test_plain_text_dataset_rows_become_documents(tmp_path):
    """A `text` column, one paragraph per row; empty rows close a document (wikitext's layout)."""
    rows = [
        {"text": text} for text in ["", " = Emma = ", "First paragraph.", "", "", " = Persuasion = ", "Second.", ""]
    ]
    corpus = load_dataset_corpus(write_dataset_folder(tmp_path / "text", rows), None, parallel=False)
    assert corpus["text"] == [" = Emma = ", "First paragraph.", " = Persuasion = ", "Second."]
    assert corpus["document"] == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="expected parallel rows"):
        load_dataset_corpus(str(tmp_path / "text"), None, parallel=True)
