"""examples/zoo.py (`hf-variants zoo`) in --quick mode on BERT (pretrained, evaluated beside its
random twin by the harness) and T5 (pretrained; the harness does not fine-tune it): the results
JSON, the summary table and the model card carry the numbers of the run's own files, the Hub
folder reloads through the Auto classes, a second call skips the built variant, and bad input is
a ValueError naming the problem."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForSeq2SeqLM, AutoTokenizer

import hf_variants  # noqa: F401  (registers the hfv_* model types with the Auto classes)
from hf_variants import cli
from test_examples_processing import load_script

pytestmark = pytest.mark.slow

QUICK = ["--quick", "--seeds", "1", "--budget_minutes", "5"]


@pytest.fixture(scope="module")
def zoo():
    return load_script("zoo")


@pytest.fixture(scope="module")
def built(zoo, tmp_path_factory):
    """The zoo on bert and t5, --quick: (records, output_dir, results_dir)."""
    root = tmp_path_factory.mktemp("zoo")
    output_dir, results_dir = root / "runs", root / "results"
    records = zoo.main(QUICK + ["--variants", "bert", "t5", "--output_dir", str(output_dir),
                                "--results_dir", str(results_dir), "--hub_namespace", "zoo-test"])
    return records, output_dir, results_dir


def test_results_json_holds_the_run_files_numbers(built):
    records, output_dir, results_dir = built
    assert set(records) == {"bert-mini-quick", "t5-mini-quick"}
    for name, record in records.items():
        assert json.loads((results_dir / f"{name}.json").read_text()) == record
        assert record["status"] == "built" and record["budget_minutes"] == 5
        run = json.loads((output_dir / name / "pretraining" / "eval_results.json").read_text())
        pretraining = record["pretraining"]
        assert pretraining["global_step"] == run["global_step"] == 3
        assert pretraining["held_out_after"]["mlm_loss"] == run["after_training"]["mlm_loss"]
        assert pretraining["held_out_before"]["mlm_loss"] == run["before_training"]["mlm_loss"]
        assert "--max_time" in pretraining["argv"] and "5.0" in pretraining["argv"]
    bert, t5 = records["bert-mini-quick"], records["t5-mini-quick"]
    assert bert["objective"] == "mlm+nsp" and bert["recipe"] == "bert"
    assert t5["objective"] == "span-corruption" and t5["recipe"] == "t5"

    report = json.loads((output_dir / "bert-mini-quick" / "evaluation" / "evaluation.json").read_text())
    tasks = bert["evaluation"]["tasks"]
    assert set(tasks) == {"sentiment", "pos", "probe: sentiment", "probe: pos"}
    for arm in ("pretrained", "random"):
        assert tasks["sentiment"][arm]["mean"] == report["tasks"]["sentiment"][arm]["test"]["mean"]
        assert tasks["pos"][arm]["mean"] == report["tasks"]["pos"][arm]["test"]["mean"]
        assert tasks["probe: pos"][arm]["mean"] == report["tasks"]["probe"][arm]["pos"]["test"]["mean"]
    assert tasks["pos"]["difference"] == pytest.approx(tasks["pos"]["pretrained"]["mean"] - tasks["pos"]["random"]["mean"])
    # T5: no harness numbers invented, and the JSON says what was not run and why.
    assert t5["evaluation"]["tasks"] == {} and t5["evaluation"]["harness"] is None
    assert set(t5["evaluation"]["not_run"]) == {"sentiment", "pos", "probe"}
    assert all("encoder-decoder" in reason for reason in t5["evaluation"]["not_run"].values())


def test_summary_table_has_a_row_per_results_json(built):
    records, _, results_dir = built
    table = (results_dir / "README.md").read_text()
    bert = records["bert-mini-quick"]
    before, after = bert["pretraining"]["held_out_before"]["mlm_loss"], bert["pretraining"]["held_out_after"]["mlm_loss"]
    row = next(line for line in table.splitlines() if line.startswith("| bert-mini-quick"))
    assert f"{before:.3f} → {after:.3f}" in row
    pos = bert["evaluation"]["tasks"]["pos"]
    assert f"pos: {pos['pretrained']['mean']:.1f} vs {pos['random']['mean']:.1f}" in row
    assert any(line.startswith("| t5-mini-quick") and "sentiment, pos, probe" in line for line in table.splitlines())


def test_card_model_index_has_the_measured_values(built):
    records, output_dir, _ = built
    bert = records["bert-mini-quick"]
    card = ModelCard.load(output_dir / "bert-mini-quick" / "hub" / "README.md")
    values = {(result.dataset_type, result.metric_type, result.metric_name): result.metric_value
              for result in card.data.eval_results}
    assert values[("local/hf-variants-austen", "mlm_loss", "Mlm loss")] == bert["pretraining"]["held_out_after"]["mlm_loss"]
    sentiment = bert["evaluation"]["tasks"]["sentiment"]
    assert values[("hf_variants/rt_polarity", "accuracy", "sentiment (accuracy %)")] == sentiment["pretrained"]["mean"]
    assert "random-weight twin" in card.text and f"{sentiment['random']['mean']:.1f}" in card.text
    assert 'from_pretrained("zoo-test/bert-mini-quick")' in card.text  # --hub_namespace
    assert "- not run: ner:" in card.text


def test_hub_folders_reload_through_the_auto_classes(built):
    _, output_dir, _ = built
    bert_dir, t5_dir = output_dir / "bert-mini-quick" / "hub", output_dir / "t5-mini-quick" / "hub"
    assert "auto_map" in json.loads((bert_dir / "config.json").read_text())
    assert (bert_dir / "model.safetensors").is_file() and not list(bert_dir.glob("*.bin"))
    model = AutoModel.from_pretrained(bert_dir)
    assert type(model).__name__ == "BertModel" and model.config.hidden_size == 32
    tokenizer = AutoTokenizer.from_pretrained(bert_dir)
    outputs = model(**tokenizer(["It is a truth universally acknowledged."], return_tensors="pt"))
    assert outputs.last_hidden_state.shape[-1] == 32
    assert type(AutoModelForSeq2SeqLM.from_pretrained(t5_dir)).__name__ == "T5ForConditionalGeneration"


def test_a_second_call_skips_the_built_variant(zoo, built):
    _, output_dir, results_dir = built
    weights = output_dir / "bert-mini-quick" / "hub" / "model.safetensors"
    stamp = os.stat(weights).st_mtime_ns
    records = zoo.main(QUICK + ["--variants", "bert", "--output_dir", str(output_dir), "--results_dir", str(results_dir)])
    assert records["bert-mini-quick"]["skipped"] is True
    assert os.stat(weights).st_mtime_ns == stamp
    assert "skipped" not in json.loads((results_dir / "bert-mini-quick.json").read_text())


def test_a_lost_results_json_is_rebuilt_from_the_interrupted_runs(zoo, built):
    # The results JSON is written last: without it the variant is built again, the pretraining run
    # resumes from its final checkpoint (no new steps) and the evaluation reuses its finished runs.
    records, output_dir, results_dir = built
    first = records["bert-mini-quick"]
    (results_dir / "bert-mini-quick.json").unlink()
    again = zoo.main(QUICK + ["--variants", "bert", "--output_dir", str(output_dir), "--results_dir", str(results_dir)])
    record = again["bert-mini-quick"]
    assert record["pretraining"]["global_step"] == 3
    assert record["pretraining"]["held_out_before"] == first["pretraining"]["held_out_before"]  # from eval_curve.jsonl
    assert record["evaluation"]["tasks"] == first["evaluation"]["tasks"]
    assert json.loads((results_dir / "bert-mini-quick.json").read_text()) == record


def test_bad_input_is_a_value_error_naming_it(zoo, tmp_path):
    with pytest.raises(ValueError, match="unknown variant.*'nope'"):
        zoo.main(["--variants", "bert", "nope", "--results_dir", str(tmp_path)])
    for budget in ("0", "-1"):
        with pytest.raises(ValueError, match="--budget_minutes"):
            zoo.main(["--variants", "bert", "--budget_minutes", budget, "--results_dir", str(tmp_path)])
    assert not list(Path(tmp_path).iterdir())  # nothing written before the input is checked
    assert cli.main(["zoo", "--variants", "nope"]) == 1  # the console script reports it and fails


def test_a_variant_run_pretraining_cannot_train_is_recorded_not_built(zoo, tmp_path):
    records = zoo.main(QUICK + ["--variants", "gpt", "--output_dir", str(tmp_path / "runs"),
                                "--results_dir", str(tmp_path / "results")])
    record = records["gpt2-mini-quick"]
    assert record["status"] == "not built" and "examples/run_clm.py" in record["reason"]
    assert json.loads((tmp_path / "results" / "gpt2-mini-quick.json").read_text()) == record
    assert not (tmp_path / "runs").exists()  # nothing trained
    assert "| gpt2-mini-quick | clm |" in (tmp_path / "results" / "README.md").read_text()
