"""research/zoo.py (`python -m research.zoo`) in --quick mode on BERT (pretrained with the zoo's settings,
evaluated beside its random twin by the harness) and T5 (pretrained; compared with its twin on
the held-out loss and fine-tuned text-to-text on sentiment beside it): the results JSON, the summary table and the model card carry the numbers of
the run's own files, the Hub folder reloads through the Auto classes, a second call skips the
built variant, `--adopt` builds from a finished run (and refuses folders that do not fit), a
failed rebuild leaves the previous Hub folder as it was, `--reevaluate` redoes a built variant's
evaluation without pretraining, and bad input is a ValueError naming the problem. The four variants of the other scripts: test_zoo_other.py."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForSeq2SeqLM, AutoTokenizer

import hf_variants  # noqa: F401  (registers the hfv_* model types with the Auto classes)
from hf_variants.registry import SPECS
from tests.common.paths import REPO_ROOT
from tests.common.zoo_quick import QUICK, build_quick, load_zoo

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zoo():
    return load_zoo()


@pytest.fixture(scope="module")
def built(zoo, tmp_path_factory):
    """The zoo on bert and t5, --quick: (records, output_dir, results_dir)."""
    return build_quick(zoo, tmp_path_factory.mktemp("zoo"), ["bert", "t5"], "--hub_namespace", "zoo-test")


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
    assert tasks["pos"]["difference"] == pytest.approx(
        tasks["pos"]["pretrained"]["mean"] - tasks["pos"]["random"]["mean"]
    )
    # T5: no harness numbers invented (the JSON says what was not run and why); its rows are
    # run_pretraining's own held-out loss after training beside before it (the random twin), and
    # the text-to-text sentiment fine-tuning of both.
    t5_run = json.loads((output_dir / "t5-mini-quick" / "pretraining" / "eval_results.json").read_text())
    assert t5["evaluation"]["harness"] is None
    assert set(t5["evaluation"]["tasks"]) == {"held-out loss", "held-out perplexity", "sentiment (text-to-text)"}
    loss = t5["evaluation"]["tasks"]["held-out loss"]
    assert loss["pretrained"]["mean"] == t5_run["after_training"]["mlm_loss"]
    assert loss["random"]["mean"] == t5_run["before_training"]["mlm_loss"]
    assert loss["difference"] == pytest.approx(loss["pretrained"]["mean"] - loss["random"]["mean"], abs=1e-4)
    assert loss["ahead"] == (loss["pretrained"]["mean"] < loss["random"]["mean"]) and not loss["higher_is_better"]
    assert set(t5["evaluation"]["not_run"]) == {"pos", "probe"}
    assert all("encoder-decoder" in reason for reason in t5["evaluation"]["not_run"].values())


def test_t5_is_fine_tuned_text_to_text_beside_its_twin(built):
    # The row is the runs' own test exact match (the generated label word), pretrained vs a twin
    # fine-tuned under the same schedule: docs/results.md's recipe (prefix, Adafactor, lr 3e-3).
    records, output_dir, _ = built
    evaluation = records["t5-mini-quick"]["evaluation"]
    row, tuned = evaluation["tasks"]["sentiment (text-to-text)"], evaluation["fine_tuning"]
    runs = output_dir / "t5-mini-quick" / "evaluation" / "run_seq2seq"
    for arm in ("pretrained", "random"):
        run = json.loads((runs / arm / "seed42" / "zoo_run.json").read_text())
        results = json.loads((runs / arm / "seed42" / "all_results.json").read_text())
        assert run["test"] == results["predict_exact_match"] == row[arm]["mean"] and row[arm]["n"] == 1
        assert tuned["runs"][arm]["42"]["test"] == run["test"]
        assert not (runs / arm / "seed42" / "model.safetensors").exists()  # scores only
    assert row["difference"] == pytest.approx(row["pretrained"]["mean"] - row["random"]["mean"])
    assert row["split"] == "test" and row["higher_is_better"] and "exact match" in row["metric"]
    schedule = " ".join(tuned["schedule"])
    assert (
        "--source_prefix sentiment: " in schedule and "--optim adafactor --optim_args scale_parameter=True" in schedule
    )
    assert (
        "--learning_rate 3e-3" in schedule and tuned["seeds"] == [42] and tuned["script"] == "examples/run_seq2seq.py"
    )
    assert not (runs / "twins").exists()  # the twins are made for each run and removed


def test_the_zoo_settings_reach_the_run(built):
    # BERT trains with the zoo's 40% masking and NSP weighted 0.1: the run's own record says so.
    records, output_dir, _ = built
    bert, t5 = records["bert-mini-quick"], records["t5-mini-quick"]
    run = json.loads((output_dir / "bert-mini-quick" / "pretraining" / "eval_results.json").read_text())
    assert run["mlm_probability"] == 0.4 and run["eval_mlm_probability"] == 0.15 and run["second_task_weight"] == 0.1
    assert run["learning_rate"] == 1e-3  # over the bert recipe's own
    assert bert["settings"]["name"] == "zoo" and "--second_task_weight" in bert["settings"]["argv"]
    assert "40% masking" in bert["settings"]["why"]
    assert t5["settings"]["name"] == "paper" and t5["settings"]["argv"] == []


def test_summary_table_has_a_row_per_results_json(zoo, built):
    records, _, results_dir = built
    table = (results_dir / "README.md").read_text()
    bert = records["bert-mini-quick"]
    before, after = (
        bert["pretraining"]["held_out_before"]["mlm_loss"],
        bert["pretraining"]["held_out_after"]["mlm_loss"],
    )
    row = next(line for line in table.splitlines() if line.startswith("| bert-mini-quick"))
    assert f"{before:.3f} → {after:.3f}" in row
    pos = bert["evaluation"]["tasks"]["pos"]
    assert f"pos: {zoo._number(pos['pretrained']['mean'])} vs {zoo._number(pos['random']['mean'])}" in row
    # ahead / behind only beyond the larger std of the two arms, else within noise
    noise = max(pos["pretrained"]["std"], pos["random"]["std"])
    assert pos["noise"] == round(noise, 2) and pos["ahead"] == (pos["difference"] > noise)
    word = (
        "tied"
        if pos["difference"] == 0
        else "ahead"
        if pos["difference"] > noise
        else "behind"
        if pos["difference"] < -noise
        else "within noise"
    )
    assert word in row
    t5_row = next(line for line in table.splitlines() if line.startswith("| t5-mini-quick"))
    assert "| pos, probe |" in t5_row and "held-out loss: " in t5_row and "sentiment (text-to-text): " in t5_row


def test_card_model_index_has_the_measured_values(built):
    records, output_dir, _ = built
    bert = records["bert-mini-quick"]
    card = ModelCard.load(output_dir / "bert-mini-quick" / "hub" / "README.md")
    values = {
        (result.dataset_type, result.metric_type, result.metric_name): result.metric_value
        for result in card.data.eval_results
    }
    assert (
        values[("local/hf-variants-austen", "mlm_loss", "Mlm loss")]
        == bert["pretraining"]["held_out_after"]["mlm_loss"]
    )
    sentiment = bert["evaluation"]["tasks"]["sentiment"]
    assert values[("hf_variants/rt_polarity", "accuracy", "sentiment (accuracy %)")] == sentiment["pretrained"]["mean"]
    assert "random-weight twin" in card.text and f"{sentiment['random']['mean']:.1f}" in card.text
    assert 'from_pretrained("zoo-test/bert-mini-quick")' in card.text  # --hub_namespace
    assert "- not run: ner:" in card.text
    t5 = ModelCard.load(output_dir / "t5-mini-quick" / "hub" / "README.md")
    sentiment = records["t5-mini-quick"]["evaluation"]["tasks"]["sentiment (text-to-text)"]
    assert [
        result.metric_value for result in t5.data.eval_results if result.dataset_type == "hf_variants/rt_polarity"
    ] == [sentiment["pretrained"]["mean"]]
    assert "fine-tuned with examples/run_seq2seq.py" in t5.text


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
    records = zoo.main(
        QUICK + ["--variants", "bert", "--output_dir", str(output_dir), "--results_dir", str(results_dir)]
    )
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
    # The study's own entry point, from the checkout, reports it and fails.
    result = subprocess.run(
        [sys.executable, "-m", "research.zoo", "--variants", "nope"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 1 and "unknown variant" in result.stderr, result.stderr[-2000:]


def test_every_registered_variant_is_built_and_one_without_a_mini_is_not(zoo):
    assert all(zoo.not_built_reason(spec) is None for spec in SPECS.values())
    no_mini = dataclasses.replace(SPECS["hfv_gpt"], mini_config=None)
    assert zoo.not_built_reason(no_mini) == "variant gpt declares no mini config"


def files_of(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_adopt_builds_from_a_finished_run_and_records_its_own_arguments(zoo, built, tmp_path):
    records, output_dir, _ = built
    run_dir, eval_dir = output_dir / "bert-mini-quick" / "pretraining", output_dir / "bert-mini-quick" / "evaluation"
    run = json.loads((run_dir / "eval_results.json").read_text())
    out, results = tmp_path / "runs", tmp_path / "results"
    # A zoo budget and seed unlike the run's: the record must carry the run's, not these.
    record = zoo.main(
        [
            "--quick",
            "--seeds",
            "1",
            "--budget_minutes",
            "7",
            "--seed",
            "5",
            "--variants",
            "bert",
            "--adopt",
            f"bert={run_dir}",
            "--adopt_evaluation",
            f"bert={eval_dir}",
            "--output_dir",
            str(out),
            "--results_dir",
            str(results),
        ]
    )["bert-mini-quick"]
    pretraining = record["pretraining"]
    assert pretraining["adopted"] == str(run_dir.resolve()) and pretraining["argv"] is None
    assert pretraining["arguments"]["mlm_probability"] == run["mlm_probability"] == 0.4
    assert pretraining["arguments"]["learning_rate"] == run["learning_rate"]
    assert pretraining["global_step"] == run["global_step"] and pretraining["tokens_seen"] == run["tokens_seen"]
    assert pretraining["train_minutes"] == round(run["train_minutes"], 2) and pretraining["seed"] is None
    assert pretraining["held_out_after"]["mlm_loss"] == run["after_training"]["mlm_loss"]
    assert record["budget_minutes"] is None and record["settings"]["name"] == "adopted"
    assert record["evaluation"]["adopted"] == str(eval_dir.resolve())
    assert record["evaluation"]["tasks"] == records["bert-mini-quick"]["evaluation"]["tasks"]
    assert set(record["evaluation"]["not_run"]) == {"ner", "qa"}  # the adopted evaluation ran the zoo's tasks
    assert not (out / "bert-mini-quick" / "pretraining").exists()  # nothing trained, nothing evaluated
    assert not (out / "bert-mini-quick" / "evaluation").exists()
    hub = out / "bert-mini-quick" / "hub"
    assert (hub / "model.safetensors").read_bytes() == (run_dir / "model.safetensors").read_bytes()
    assert type(AutoModel.from_pretrained(hub)).__name__ == "BertModel"
    assert f"Adopted run {run_dir.resolve()}" in (hub / "README.md").read_text()
    assert "| bert-mini-quick (--quick) | mlm+nsp | adopted (" in (results / "README.md").read_text()


def test_adopt_refuses_folders_that_do_not_fit(zoo, built, tmp_path):
    _, output_dir, _ = built
    run_dir, eval_dir = output_dir / "bert-mini-quick" / "pretraining", output_dir / "bert-mini-quick" / "evaluation"
    incomplete = tmp_path / "incomplete"
    shutil.copytree(run_dir, incomplete)
    (incomplete / "eval_curve.jsonl").unlink()
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    results = tmp_path / "results"
    cases = [
        (["--variants", "bert", "--adopt", "bert"], "--adopt takes NAME=FOLDER"),
        (["--variants", "bert", "--adopt", f"roberta={run_dir}"], "'roberta' is not among the variants built"),
        (
            ["--variants", "bert", "--adopt", f"bert={incomplete}"],
            "not a finished run_pretraining.py folder.*eval_curve.jsonl",
        ),
        (["--variants", "roberta", "--adopt", f"roberta={run_dir}"], "model_type 'hfv_bert', roberta is 'hfv_roberta'"),
        (["--variants", "gpt", "--adopt", f"gpt={run_dir}"], "gpt pretrains with examples/run_clm.py"),
        (["--variants", "bert", "--adopt_evaluation", f"bert={eval_dir}"], "needs --adopt bert=RUN_DIR"),
        (
            ["--variants", "bert", "--adopt", f"bert={copy}", "--adopt_evaluation", f"bert={eval_dir}"],
            "evaluated .*, not the adopted run",
        ),
        (
            ["--variants", "bert", "--adopt", f"bert={run_dir}", "--adopt_evaluation", f"bert={tmp_path}"],
            "no evaluation.json",
        ),
    ]
    for arguments, message in cases:
        with pytest.raises(ValueError, match=message):
            zoo.main(QUICK + arguments + ["--output_dir", str(tmp_path / "runs"), "--results_dir", str(results)])
    assert not results.exists() and not (tmp_path / "runs").exists()  # refused before anything was written


def test_a_failed_rebuild_leaves_the_previous_hub_folder_intact(zoo, built, tmp_path):
    # The previous build's Hub folder, then a rebuild from an adopted run whose weights file is
    # unreadable: the failure comes while the new folder is staged, and the old one stays as it was.
    _, output_dir, _ = built
    out, results = tmp_path / "runs", tmp_path / "results"
    hub = out / "t5-mini-quick" / "hub"
    shutil.copytree(output_dir / "t5-mini-quick" / "hub", hub)
    before = files_of(hub)
    adopted = tmp_path / "adopted"
    shutil.copytree(output_dir / "t5-mini-quick" / "pretraining", adopted)
    (adopted / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(RuntimeError, match="could not build"):
        zoo.main(
            QUICK
            + ["--variants", "t5", "--adopt", f"t5={adopted}", "--output_dir", str(out), "--results_dir", str(results)]
        )
    record = json.loads((results / "t5-mini-quick.json").read_text())
    assert record["status"] == "failed" and "safetensors" in record["reason"].lower()
    assert files_of(hub) == before
    assert sorted(path.name for path in hub.parent.iterdir()) == ["hub"]  # no staging folder left behind


def test_reevaluate_redoes_the_evaluation_of_a_built_variant_without_pretraining(zoo, built, tmp_path):
    # A T5 built before its text-to-text row existed: --reevaluate adds the row from the finished
    # pretraining folder; the pretraining part of the results JSON stays as it was recorded.
    records, output_dir, results_dir = built
    out, results = tmp_path / "runs", tmp_path / "results"
    shutil.copytree(output_dir / "t5-mini-quick", out / "t5-mini-quick")
    shutil.rmtree(out / "t5-mini-quick" / "evaluation")
    old = json.loads((results_dir / "t5-mini-quick.json").read_text())
    del old["evaluation"]["tasks"]["sentiment (text-to-text)"], old["evaluation"]["fine_tuning"]
    results.mkdir()
    (results / "t5-mini-quick.json").write_text(json.dumps(old))
    weights = (out / "t5-mini-quick" / "pretraining" / "model.safetensors").read_bytes()
    record = zoo.main(QUICK + ["--reevaluate", "t5", "--output_dir", str(out), "--results_dir", str(results)])
    assert list(record) == ["t5-mini-quick"]  # --reevaluate alone: only the variants it names
    record = record["t5-mini-quick"]
    assert record["pretraining"] == old["pretraining"] and record["settings"] == old["settings"]
    assert (out / "t5-mini-quick" / "pretraining" / "model.safetensors").read_bytes() == weights  # not trained
    assert record["evaluation"]["tasks"] == records["t5-mini-quick"]["evaluation"]["tasks"]  # the same seeds' runs
    assert "sentiment (text-to-text)" in (out / "t5-mini-quick" / "hub" / "README.md").read_text()
    assert json.loads((results / "t5-mini-quick.json").read_text()) == record


def test_reevaluate_refuses_what_it_cannot_redo(zoo, built, tmp_path):
    _, output_dir, results_dir = built
    out = tmp_path / "runs"
    shutil.copytree(output_dir / "t5-mini-quick" / "pretraining", out / "t5-mini-quick" / "pretraining")
    (out / "t5-mini-quick" / "pretraining" / "eval_results.json").unlink()  # as if killed before the end
    cases = [
        (["--reevaluate", "t5", "--results_dir", str(tmp_path / "none")], "no results JSON"),
        (
            ["--reevaluate", "t5", "--results_dir", str(results_dir)],
            "not a finished run_pretraining.py folder.*eval_results",
        ),
        (["--reevaluate", "t5", "--force", "--results_dir", str(results_dir)], "cannot go with --adopt t5 or --force"),
        (
            ["--variants", "bert", "--reevaluate", "t5", "--results_dir", str(results_dir)],
            "not among the variants built",
        ),
    ]
    for arguments, message in cases:
        with pytest.raises(ValueError, match=message):
            zoo.main(QUICK + arguments + ["--output_dir", str(out)])
    assert sorted(path.name for path in out.iterdir()) == ["t5-mini-quick"]  # refused before anything was written
