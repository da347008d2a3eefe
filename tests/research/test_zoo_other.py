"""research/zoo.py in --quick mode on the four variants other scripts pretrain (research/zoo_scripts.py):
GPT and Transformer-XL (run_clm.py, causal LM), the original Transformer (run_translation.py, G2P
translation) and ViT (run_mae.py, MAE on Fashion-MNIST). Each Hub folder reloads through its Auto
class; each results JSON holds the script's own held-out numbers after training beside the same
model's before its first step (the random twin), the decoders' scored generation task and ViT's
fine-tuning on the labels beside its twin's; the budget stops every script; a lost results JSON is
rebuilt from the finished runs with the same twin numbers; --reevaluate adds today's rows to
variants built before them (rescoring the decoders' generation with their rebuilt twins). Also the
zoo's settings table."""

from __future__ import annotations

import json
import shutil

import pytest
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForPreTraining, AutoModelForSeq2SeqLM, AutoTokenizer

import hf_variants  # noqa: F401  (registers the hfv_* model types with the Auto classes)
from hf_variants.registry import SPECS
from tests.common.zoo_quick import QUICK, build_quick, load_zoo

OTHER = {
    "gpt2-mini-quick": (AutoModelForCausalLM, "GPTLMHeadModel"),
    "transfo-xl-mini-quick": (AutoModelForCausalLM, "TransfoXLLMHeadModel"),
    "transformer-mini-quick": (AutoModelForSeq2SeqLM, "TransformerForConditionalGeneration"),
    "vit-mini-quick": (AutoModelForPreTraining, "ViTForPreTraining"),
}


@pytest.fixture(scope="module")
def zoo():
    return load_zoo()


@pytest.fixture(scope="module")
def built(zoo, tmp_path_factory):
    """The zoo on gpt, transfo_xl, transformer and vit, --quick: (records, output_dir, results_dir)."""
    return build_quick(zoo, tmp_path_factory.mktemp("zoo-other"), ["gpt", "transfo_xl", "transformer", "vit"])


def read(path):
    return json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OTHER))
def test_each_hub_folder_reloads_through_its_auto_class(built, name):
    records, output_dir, _ = built
    hub = output_dir / name / "hub"
    assert records[name]["status"] == "built" and "auto_map" in read(hub / "config.json")
    auto_class, class_name = OTHER[name]
    model = auto_class.from_pretrained(hub)
    assert type(model).__name__ == class_name and model.config.hidden_size == 32  # the tiny sizes
    card = ModelCard.load(hub / "README.md")
    assert "random-weight twin" in card.text and "budget" in card.text.lower()
    if name == "vit-mini-quick":
        assert (hub / "preprocessor_config.json").is_file()
        assert type(AutoModel.from_pretrained(hub)).__name__ == "ViTModel"
    else:
        tokenizer = AutoTokenizer.from_pretrained(hub)
        assert model.config.vocab_size >= len(tokenizer)


@pytest.mark.slow
def test_the_rows_are_the_scripts_own_numbers_beside_the_untrained_model(built):
    records, output_dir, _ = built
    for name in ("gpt2-mini-quick", "transfo-xl-mini-quick"):  # run_clm: before_training / after_training
        record, run = records[name], read(output_dir / name / "pretraining" / "eval_results.json")
        rows = record["evaluation"]["tasks"]
        assert rows["held-out perplexity"]["pretrained"]["mean"] == run["after_training"]["perplexity"]
        assert rows["held-out perplexity"]["random"]["mean"] == run["before_training"]["perplexity"]
        assert rows["held-out loss"]["difference"] == pytest.approx(
            run["after_training"]["loss"] - run["before_training"]["loss"], abs=1e-4
        )
        assert (
            record["pretraining"]["corpus"] == "austen"
            and record["pretraining"]["tokens_seen"] == run["tokens_seen"] > 0
        )
    for name in ("transformer-mini-quick", "vit-mini-quick"):  # Trainer: the step-0 and final evaluations
        record, state = records[name], read(output_dir / name / "pretraining" / "trainer_state.json")
        final = read(output_dir / name / "pretraining" / "eval_results.json")
        step_zero = [entry for entry in state["log_history"] if entry.get("step") == 0 and "eval_loss" in entry]
        assert len(step_zero) == 1  # --eval_on_start, once
        row = next(row for key, row in record["evaluation"]["tasks"].items() if "loss" in key)
        assert row["random"]["mean"] == step_zero[0]["eval_loss"] and row["pretrained"]["mean"] == final["eval_loss"]
        assert row["ahead"] == (final["eval_loss"] < step_zero[0]["eval_loss"])
    assert "held-out exact match" in records["transformer-mini-quick"]["evaluation"]["tasks"]
    for record in records.values():
        pretraining = record["pretraining"]
        assert pretraining["global_step"] == 3 and pretraining["stopped_by_max_time"] is False
        assert pretraining["argv"][pretraining["argv"].index("--max_time") + 1] == "5.0"
        assert record["budget_minutes"] == 5
        assert bool(record["evaluation"]["not_run"]) == (record["variant"] != "vit")  # ViT: every task run


@pytest.mark.slow
def test_the_decoders_generation_task_is_a_row_beside_the_twin(built):
    # run_clm's greedy continuations of held-out prompts, scored before training (the twin) and after.
    records, output_dir, _ = built
    for name in ("gpt2-mini-quick", "transfo-xl-mini-quick"):
        run = read(output_dir / name / "pretraining" / "eval_results.json")
        rows = records[name]["evaluation"]["tasks"]
        for row, key in (("continuation accuracy", "token_accuracy"), ("first-token accuracy", "first_token_accuracy")):
            assert rows[row]["pretrained"]["mean"] == run["generation_after"][key]
            assert rows[row]["random"]["mean"] == run["generation_before"][key] and rows[row]["higher_is_better"]
        assert (
            run["generation_after"]["prompts"] == 4
            and "4 held-out prompts of 8 tokens" in rows["continuation accuracy"]["metric"]
        )
        assert "generation task" not in records[name]["evaluation"]["not_run"]


@pytest.mark.slow
def test_vit_is_fine_tuned_on_the_labels_beside_its_twin(built):
    records, output_dir, _ = built
    evaluation = records["vit-mini-quick"]["evaluation"]
    row, runs = evaluation["tasks"]["Fashion-MNIST, 10% of the labels"], output_dir / "vit-mini-quick" / "evaluation"
    for arm in ("pretrained", "random"):
        results = read(runs / "run_image_classification" / arm / "seed42" / "all_results.json")
        assert row[arm]["mean"] == 100 * results["test_accuracy"] and row[arm]["n"] == 1
    assert row["difference"] == pytest.approx(row["pretrained"]["mean"] - row["random"]["mean"])
    schedule = " ".join(evaluation["fine_tuning"]["schedule"])
    assert "--horizontal_flip" in schedule and "--learning_rate 1e-3" in schedule
    card = ModelCard.load(output_dir / "vit-mini-quick" / "hub" / "README.md")
    assert [
        result.metric_value
        for result in card.data.eval_results
        if result.dataset_type == "hf_variants/fashion_mnist" and result.metric_type == "accuracy"
    ] == [row["pretrained"]["mean"]]


@pytest.mark.slow
def test_the_summary_table_shows_whether_each_is_ahead_of_its_twin(built):
    records, _, results_dir = built
    table = (results_dir / "README.md").read_text()
    for name, record in records.items():
        row = next(line for line in table.splitlines() if line.startswith(f"| {name}"))
        loss = next(value for key, value in record["evaluation"]["tasks"].items() if "loss" in key)
        word = "ahead" if loss["ahead"] else "tied" if loss["difference"] == 0 else "behind"
        assert f"{'loss' if 'vit' not in name else 'reconstruction loss'}: " in row and word in row


@pytest.mark.slow
def test_the_budget_stops_every_script(zoo, tmp_path):
    # A budget spent by the first step: run_clm's and run_mae's TimeBudget stop them there.
    records = zoo.main(
        [
            "--quick",
            "--seeds",
            "1",
            "--budget_minutes",
            "0.0001",
            "--variants",
            "gpt",
            "vit",
            "--output_dir",
            str(tmp_path / "runs"),
            "--results_dir",
            str(tmp_path / "results"),
        ]
    )
    for record in records.values():
        assert record["pretraining"]["global_step"] == 1 and record["pretraining"]["stopped_by_max_time"] is True


@pytest.mark.slow
def test_a_lost_results_json_is_rebuilt_with_the_same_twin(zoo, built):
    # A finished run is read back, not run again; an unfinished one (no final results) resumes from
    # its checkpoint without a new step-0 evaluation: the twin's numbers come from run_clm's
    # before_training.json and from the checkpoint's log history.
    records, output_dir, results_dir = built
    for name in ("gpt2-mini-quick", "vit-mini-quick"):
        (results_dir / f"{name}.json").unlink()
    again = zoo.main(
        QUICK + ["--variants", "gpt", "vit", "--output_dir", str(output_dir), "--results_dir", str(results_dir)]
    )
    for name in ("gpt2-mini-quick", "vit-mini-quick"):
        assert again[name]["pretraining"]["global_step"] == 3 and "reused" in again[name]["pretraining"]
        assert again[name]["evaluation"]["tasks"] == records[name]["evaluation"]["tasks"]
    for name, final in (("gpt2-mini-quick", "eval_results.json"), ("vit-mini-quick", "all_results.json")):
        (results_dir / f"{name}.json").unlink()
        (output_dir / name / "pretraining" / final).unlink()  # as if killed before the end
    resumed = zoo.main(
        QUICK + ["--variants", "gpt", "vit", "--output_dir", str(output_dir), "--results_dir", str(results_dir)]
    )
    for name in ("gpt2-mini-quick", "vit-mini-quick"):
        assert (
            "reused" not in resumed[name]["pretraining"]
            and "--eval_on_start" not in resumed[name]["pretraining"]["argv"]
        )
        assert resumed[name]["pretraining"]["held_out_before"] == records[name]["pretraining"]["held_out_before"]
    state = read(output_dir / "vit-mini-quick" / "pretraining" / "trainer_state.json")
    assert sum(entry.get("step") == 0 and "eval_loss" in entry for entry in state["log_history"]) == 1


def test_the_settings_table(zoo):
    # The zoo's settings go to the MLM family only, after the paper's --recipe (so they win), and
    # --paper_settings leaves the papers' recipes as they are.
    assert set(zoo.ZOO_SETTINGS) == {"bert", "roberta", "albert", "xlm", "spanbert", "electra"}
    specs = {spec.name: spec for spec in SPECS.values()}
    args = zoo.parse_arguments(["--variants", "bert"])
    bert = zoo.pretraining_argv(specs["bert"], args, zoo.Path("run"))
    assert bert.index("--mlm_probability") > bert.index("--recipe")
    assert bert[bert.index("--second_task_weight") + 1] == "0.1" and bert[bert.index("--mlm_probability") + 1] == "0.4"
    roberta = zoo.pretraining_argv(specs["roberta"], args, zoo.Path("run"))
    assert "--second_task_weight" not in roberta and roberta[roberta.index("--learning_rate") + 1] == "1e-3"
    electra = zoo.pretraining_argv(specs["electra"], args, zoo.Path("run"))
    assert (
        "--mlm_probability" not in electra and electra[electra.index("--config_overrides") + 1] == "mlm_probability=0.4"
    )
    quick = zoo.pretraining_argv(specs["electra"], zoo.parse_arguments(["--quick"]), zoo.Path("run"))
    overrides = quick[quick.index("--config_overrides") + 1]
    assert quick.count("--config_overrides") == 1 and overrides.startswith("mlm_probability=0.4,hidden_size=32")
    paper = zoo.parse_arguments(["--paper_settings"])
    for name in ("bert", "electra"):
        argv = zoo.pretraining_argv(specs[name], paper, zoo.Path("run"))
        assert "--mlm_probability" not in argv and "--config_overrides" not in argv
        assert zoo.zoo_settings(specs[name], paper)["name"] == "paper"
    for name in ("t5", "xlnet", "gpt"):  # not the MLM family: the paper's recipe
        assert zoo.zoo_settings(specs[name], args)["argv"] == []
        assert zoo.zoo_settings(specs[name], args)["name"] == "paper"


@pytest.mark.slow
def test_reevaluate_adds_the_new_rows_to_variants_built_before_them(zoo, built, tmp_path):
    # As built before the generation task and the labels' fine-tuning existed: the runs' results
    # and the results JSON without them. --reevaluate trains nothing, rescores the decoders (their
    # twins rebuilt from the runs' arguments give the scores the runs took themselves) and
    # fine-tunes ViT.
    _, output_dir, results_dir = built
    out, results = tmp_path / "runs", tmp_path / "results"
    results.mkdir()
    names = {"gpt": "gpt2-mini-quick", "transfo_xl": "transfo-xl-mini-quick", "vit": "vit-mini-quick"}
    new_rows = ("continuation accuracy", "first-token accuracy", "Fashion-MNIST, 10% of the labels")
    steps, expected, recorded = {}, {}, {}  # as on disk now (an earlier test may have resumed a run in place)
    for name in names.values():
        shutil.copytree(output_dir / name, out / name)
        shutil.rmtree(out / name / "evaluation", ignore_errors=True)
        old = read(results_dir / f"{name}.json")
        steps[name], expected[name] = old["pretraining"]["global_step"], dict(old["evaluation"]["tasks"])
        old["evaluation"]["tasks"] = {
            row: value for row, value in old["evaluation"]["tasks"].items() if row not in new_rows
        }
        argv = old["pretraining"]["argv"]
        if "--generation_prompts" in argv:  # the arguments of a run made before the task existed
            at = argv.index("--generation_prompts")
            del argv[at : at + 4]
        recorded[name] = old["pretraining"]
        (results / f"{name}.json").write_text(json.dumps(old))
    for name in ("gpt2-mini-quick", "transfo-xl-mini-quick"):
        path = out / name / "pretraining" / "eval_results.json"
        run = read(path)
        del run["generation_before"], run["generation_after"]
        path.write_text(json.dumps(run))
    weights = (out / "vit-mini-quick" / "pretraining" / "model.safetensors").read_bytes()
    # Today's budget and seed are not the runs': the records keep the runs' own (and the twins
    # are rebuilt from the recorded arguments).
    again = zoo.main(
        QUICK
        + [
            "--reevaluate",
            *names,
            "--budget_minutes",
            "9",
            "--seed",
            "7",
            "--output_dir",
            str(out),
            "--results_dir",
            str(results),
        ]
    )
    assert set(again) == set(names.values())
    for name in names.values():
        assert again[name]["budget_minutes"] == 5 and again[name]["pretraining"]["argv"] == recorded[name]["argv"]
        assert again[name]["pretraining"]["seed"] == 0
        assert again[name]["evaluation"]["tasks"] == expected[name]
        assert again[name]["pretraining"]["global_step"] == steps[name] and "reused" in again[name]["pretraining"]
    for name in ("gpt2-mini-quick", "transfo-xl-mini-quick"):
        assert (out / name / "pretraining" / "generation_results.json").is_file()
    assert (out / "vit-mini-quick" / "pretraining" / "model.safetensors").read_bytes() == weights
    (out / "gpt2-mini-quick" / "pretraining" / "eval_results.json").unlink()  # an unfinished run
    with pytest.raises(ValueError, match="no finished examples/run_clm.py run"):
        zoo.main(QUICK + ["--reevaluate", "gpt", "--output_dir", str(out), "--results_dir", str(results)])
