"""research/replicate.py (`python -m research.replicate`): the rows table names only flags and config fields
that exist; --quick runs rows end to end through the real run_pretraining / run_clm / run_translation
and the harness, one JSON per (row, arm, seed) holding the run files' numbers, skipped when present; the
report builder computes its verdicts from hand-written JSON by the stated rule; bad arguments are
ValueErrors naming the problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hf_variants.models.named_configs import named_config
from research import evaluate_pretraining, replicate, replication_report, replication_rows
from tests.common.example_scripts import load_example_script as load_script
from tests.common.paths import REPO_ROOT

rows_module = replication_rows
report_module = replication_report
Arm, Row, Prediction = rows_module.Arm, rows_module.Row, rows_module.Prediction


# ------------------------------------------------------------------------------------ the rows table


@pytest.mark.parametrize("row", rows_module.ROWS, ids=lambda row: row.name)
def test_every_arm_uses_flags_and_config_fields_that_exist(row, tmp_path):
    """Each arm's argv (the study's flags included) parses with its script's parser (no unknown flag) and
    its config overrides (the study's size included) build a valid mini config (unknown fields and
    invalid sizes raise)."""
    run_pretraining, run_clm = load_script("run_pretraining"), load_script("run_clm")
    support, run_translation = load_script("examples_support"), load_script("run_translation")
    args = replicate.parse_arguments(["--results_dir", str(tmp_path)])
    for arm in row.arms:
        argv = replicate.training_argv(row, arm, 0, args, tmp_path / arm.name)
        if arm.script == "run_translation":  # transformers' HfArgumentParser over the script's dataclasses
            parsed, _, training = support.parse_arguments(
                run_translation.TranslationDataArguments,
                argv,
                support.Seq2SeqModelArguments,
                support.Seq2SeqBudgetTrainingArguments,
            )
        else:
            arguments = run_clm.ClmArguments if arm.script == "run_clm" else run_pretraining.PretrainingArguments
            parsed, training = run_pretraining.parse_arguments(arguments, argv)
        assert parsed.model_name_or_path == arm.model and training.seed == 0
        config = named_config(arm.model)
        overrides = replicate.config_overrides(arm, quick=False)  # the study's size too, once it has fields
        if overrides:
            config.update_from_string(overrides)
        for key, value in arm.config_overrides:
            assert getattr(config, key) == value
        config.check_architecture()


def test_budgets_become_the_scripts_flags(tmp_path):
    args = replicate.parse_arguments(
        ["--arm_minutes", "10", "--steps_per_minute", "50", "--results_dir", str(tmp_path)]
    )
    rows = rows_module.ROWS_BY_NAME
    minutes = replicate.training_argv(rows["positions"], rows["positions"].arms[0], 1, args, tmp_path)
    assert replicate.last_flag(minutes, "--max_time") == "10" and replicate.last_flag(minutes, "--max_steps") == "500"
    assert replicate.last_flag(minutes, "--recipe") == "bert" and replicate.last_flag(minutes, "--seed") == "1"
    flops = replicate.training_argv(rows["mlm-vs-rtd"], rows["mlm-vs-rtd"].arms[1], 0, args, tmp_path)
    assert float(replicate.last_flag(flops, "--flop_budget")) == 10 * 1.5e12 and "--max_steps" not in flops
    assert replicate.last_flag(flops, "--max_time") == "15"  # the equal-FLOP arms' cap, 1.5 x
    generator = rows["electra-generator-size"]  # equal steps at the slowest arm's rate (half a mini's)
    assert (
        replicate.last_flag(replicate.training_argv(generator, generator.arms[2], 0, args, tmp_path), "--max_steps")
        == "250"
    )
    sinusoidal = rows["positions"].arm("sinusoidal")
    study = ",".join(f"{key}={value}" for key, value in rows_module.STUDY_SIZE.config)  # the study's size first
    assert replicate.config_overrides(sinusoidal, quick=False) == ",".join(
        filter(None, [study, "position_embedding_type=sinusoidal"])
    )
    assert replicate.config_overrides(sinusoidal, quick=True).endswith(",position_embedding_type=sinusoidal")
    translation = rows["positions-translation"]  # equal steps at the G2P rate; the zoo's settings, no study ones
    learned = replicate.training_argv(translation, translation.arm("learned"), 0, args, tmp_path)
    assert replicate.last_flag(learned, "--max_steps") == str(round(10 * 50 * rows_module.STEP_RATE_G2P))
    assert replicate.last_flag(learned, "--max_time") == "15" and "--recipe" not in learned
    assert replicate.last_flag(learned, "--learning_rate") == "1e-3"  # the zoo's, not STUDY_FLAGS' (also 1e-3)
    assert replicate.last_flag(learned, "--lr_scheduler_type") == "inverse_sqrt" and "--adam_beta2" in learned
    assert replicate.last_flag(learned, "--dataset_name") == "hf_variants/cmudict" and "--corpus" not in learned
    assert replicate.last_flag(learned, "--config_overrides") == "position_embedding_type=learned"  # no STUDY_SIZE
    assert "--eval_on_start" in learned  # the untrained model's held-out loss, for the JSON


def test_the_original_transformer_trains_and_generates_with_learned_positions():
    """The learned arm of positions-translation: a table per stack, added to the sqrt(d)-scaled tokens."""
    import torch
    from transformers import AutoModelForSeq2SeqLM

    config = named_config("transformer-mini")
    config.update_from_string(
        "position_embedding_type=learned,vocab_size=50,hidden_size=16,num_attention_heads=2,"
        "intermediate_size=32,num_hidden_layers=1,decoder_layers=1,max_position_embeddings=32"
    )
    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(config)
    encoder, decoder = model.get_encoder().embeddings, model.get_decoder().embeddings
    assert encoder.position_embeddings.weight.shape == (32, 16)
    assert encoder.position_embeddings is not decoder.position_embeddings
    assert encoder.scale == 4.0  # sqrt(d_model): the tokens are scaled, the learned positions are not
    ids, labels = torch.randint(2, 50, (2, 7)), torch.randint(2, 50, (2, 5))
    model(input_ids=ids, labels=labels).loss.backward()
    assert (
        encoder.position_embeddings.weight.grad.abs().sum() > 0
        and decoder.position_embeddings.weight.grad.abs().sum() > 0
    )
    assert model.generate(ids, max_new_tokens=4).shape[0] == 2


def test_a_row_naming_an_unknown_arm_or_measure_is_refused():
    arms = (Arm("a", "bert-mini"), Arm("b", "bert-mini"))
    with pytest.raises(ValueError, match="no arm 'c'"):
        Row("r", "claim", "source", arms, (Prediction("a", "better", "c"),), ("pos",)).check()
    with pytest.raises(ValueError, match="unknown measures"):
        Row("r", "claim", "source", arms, (Prediction("a", "better", "b"),), ("glue",)).check()
    with pytest.raises(ValueError, match="unknown script"):
        Row(
            "r",
            "claim",
            "source",
            (arms[0], Arm("b", "bert-mini", script="run_glue")),
            (Prediction("a", "better", "b"),),
            ("pos",),
        ).check()
    translation = (
        Arm("a", "transformer-mini", script="run_translation"),
        Arm("b", "transformer-mini", script="run_translation"),
    )
    with pytest.raises(ValueError, match="equal-FLOPs budget needs run_pretraining"):  # no --flop_budget there
        Row(
            "r", "claim", "source", translation, (Prediction("a", "equal", "b"),), ("seq2seq_loss",), budget="flops"
        ).check()


# ------------------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rows", "no-such-row"], "unknown row"),
        (["--arm_minutes", "0"], "--arm_minutes must be a positive"),
        (["--arm_minutes", "-5"], "--arm_minutes must be a positive"),
        (["--seeds", "0", "0"], "--seeds must be distinct"),
        (["--threads", "0"], "--threads must be at least 1"),
    ],
)
def test_bad_arguments_are_value_errors(argv, message):
    with pytest.raises(ValueError, match=message):
        replicate.parse_arguments(argv)


def test_the_module_entry_point_reports_a_bad_row():
    """``python -m research.replicate`` from the checkout: the study's own entry point."""
    result = subprocess.run(
        [sys.executable, "-m", "research.replicate", "--rows", "no-such-row"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 1 and "unknown row" in result.stderr, result.stderr[-2000:]


# ---------------------------------------------------------------------------- the report builder


def _record(row: str, arm: str, seed: int, metrics: dict, twin: dict | None = None) -> dict:
    return {
        "row": row,
        "arm": arm,
        "seed": seed,
        "quick": False,
        "bf16": True,
        "hardware": "test CPU",
        "budget": {
            "kind": "minutes",
            "arm_minutes": 15.0,
            "max_time_minutes": 15.0,
            "max_steps": 900,
            "flop_budget": None,
        },
        "training": {"train_minutes": 15.0, "tokens_seen": 3_000_000, "stopped_by_max_time": True},
        "metrics": metrics,
        "random_twin": twin or {},
        "wall_minutes": 20.0,
    }


FIXTURE_ROWS = (
    Row(
        "loss-row",
        "Lower loss for A.",
        "Paper, Table 1",
        (Arm("a", "bert-mini"), Arm("b", "bert-mini"), Arm("c", "bert-mini"), Arm("missing", "bert-mini")),
        (
            Prediction("a", "better", "b"),
            Prediction("b", "better", "a"),
            Prediction("c", "better", "b"),
            Prediction("a", "better", "missing"),
            Prediction("c", "equal", "b"),
        ),
        ("held_out_mlm_loss",),
    ),
    Row(
        "few-seeds",
        "A scores higher.",
        "Paper, Table 2",
        (Arm("a", "bert-mini"), Arm("b", "bert-mini")),
        (Prediction("a", "better", "b"), Prediction("a", "at_least", "b")),
        ("pos",),
    ),
)


@pytest.fixture
def fixture_report(tmp_path):
    """Hand-written results: loss-row's a is 1 nat below b (std ~0.1), c within b's noise; few-seeds has 2 seeds."""
    results = tmp_path / "results"
    losses = {"a": [5.0, 5.1, 4.9], "b": [6.0, 6.1, 5.9], "c": [6.05, 5.95, 6.0]}
    for arm, values in losses.items():
        for seed, value in enumerate(values):
            path = results / "loss-row" / f"{arm}-seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(_record("loss-row", arm, seed, {"held_out_mlm_loss": value})))
    for arm, values in {"a": [80.0, 81.0], "b": [70.0, 71.0]}.items():
        for seed, value in enumerate(values):
            path = results / "few-seeds" / f"{arm}-seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(_record("few-seeds", arm, seed, {"pos": value}, {"pos": 60.0})))
    report = report_module.write_report(results, tmp_path / "replication.md", rows=FIXTURE_ROWS)
    return results, report.read_text()


def _verdict_line(text: str, prediction: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {prediction} |"))


def test_report_verdicts_follow_the_rule(fixture_report):
    _, text = fixture_report
    assert "**held**" in _verdict_line(text, "a > b")  # 1 nat lower, std 0.1
    assert "**reversed**" in _verdict_line(text, "b > a")
    assert "**not at this scale**" in _verdict_line(text, "c > b")  # 0 difference, within the noise
    assert "**held**" in _verdict_line(text, "c ≈ b")
    assert "**not run**" in _verdict_line(text, "a > missing") and "no results for missing" in text
    assert "**not run**" in _verdict_line(text, "a >= b") and "n = 2 / 2 seeds, fewer than 3" in text


def test_report_tables_plots_and_budget_come_from_the_json(fixture_report):
    results, text = fixture_report
    assert "5 ± 0.1 (n=3)" in text and "6 ± 0.1 (n=3)" in text  # a and b: mean ± sample std
    assert "80.5 ± 0.71 (n=2) [twin 60]" in text
    assert (results / "loss-row.png").stat().st_size > 1000 and "![loss-row](results/loss-row.png)" in text
    assert "13 runs: 195.0 minutes of pretraining" in text
    assert "python -m research.replicate --rows loss-row --seeds 0 1 2 --arm_minutes 15 --bf16" in text
    assert report_module.VERDICT_RULE in text


@pytest.mark.parametrize(
    "relation, first, second, measure, expected",
    [
        ("better", [1.0, 1.1, 0.9], [2.0, 2.1, 1.9], "clm_perplexity", "held"),  # lower is better
        ("better", [1.0, 1.1, 0.9], [2.0, 2.1, 1.9], "pos", "reversed"),  # higher is better
        ("at_least", [2.0, 2.2, 1.8], [2.1, 2.0, 2.2], "pos", "held"),  # within the noise: matches
        ("equal", [1.0, 1.01, 0.99], [2.0, 2.01, 1.99], "pos", "not held"),
    ],
)
def test_verdict_signs_and_relations(relation, first, second, measure, expected):
    summary = report_module.summary
    outcome, _ = report_module.verdict(Prediction("a", relation, "b"), summary(first), summary(second), measure)
    assert outcome == expected


# ------------------------------------------------------------------------------- --quick, end to end


@pytest.mark.slow
def test_quick_runs_rows_end_to_end_and_skips_what_is_done(tmp_path):
    """masking-rate's two arms share one random twin: the first evaluates it, the second passes
    --no_random_twin and records the first one's scores; transfo-xl-memory runs run_clm under --max_time."""
    results, runs = tmp_path / "results", tmp_path / "runs"
    argv = [
        "--quick",
        "--rows",
        "masking-rate",
        "transfo-xl-memory",
        "--seeds",
        "0",
        "--results_dir",
        str(results),
        "--output_dir",
        str(runs),
    ]
    outcome = replicate.main(argv)
    expected = {f"masking-rate/{arm}-seed0.json" for arm in ("mask-0.15", "mask-0.40")} | {
        f"transfo-xl-memory/mem-{length}-seed0.json" for length in (0, 64, 256)
    }
    assert set(outcome["results"]) == expected
    for key, record in outcome["results"].items():
        assert json.loads((results / key).read_text()) == record and record["quick"] is True
        run_dir = runs / record["row"] / f"{record['arm']}-seed0"
        run = json.loads((run_dir / "eval_results.json").read_text())
        assert record["training"]["global_step"] == run["global_step"] == 3
        if record["row"] == "masking-rate":  # held-out loss from run_pretraining, POS from the harness
            assert record["metrics"]["held_out_mlm_loss"] == run["after_training"]["mlm_loss"]
            assert run["mlm_probability"] == float(record["arm"].split("-")[1])
            evaluation = json.loads((run_dir.with_name(run_dir.name + "-evaluation") / "evaluation.json").read_text())
            assert record["metrics"]["pos"] == evaluation["tasks"]["pos"]["pretrained"]["test"]["mean"]
        else:  # Transformer-XL: the perplexity with the arm's own memory, under --max_time
            length = int(record["arm"].split("-")[1])
            assert json.loads((run_dir / "config.json").read_text())["mem_len"] == length
            assert record["metrics"]["clm_perplexity"] == run["after_training"]["perplexity"]
            assert [row["mem_len"] for row in record["held_out"]["by_memory_length"]] == [0, 64, 256]
            default_minutes = replicate.parse_arguments([]).arm_minutes  # the row's arms are capped at it
            assert float(replicate.last_flag(record["argv"], "--max_time")) == default_minutes
            assert "stopped_by_max_time" in run
    first, second = (outcome["results"][f"masking-rate/{arm}-seed0.json"] for arm in ("mask-0.15", "mask-0.40"))
    first_eval, second_eval = (
        json.loads((runs / "masking-rate" / f"{arm}-seed0-evaluation" / "evaluation.json").read_text())
        for arm in ("mask-0.15", "mask-0.40")
    )
    assert first["random_twin_from"] is None and "--no_random_twin" not in first["evaluation"]["argv"]
    assert first["random_twin"]["pos"] == first_eval["tasks"]["pos"]["random"]["test"]["mean"]
    assert second["random_twin_from"] == "masking-rate/mask-0.15-seed0.json" and second["twin_key"] == first["twin_key"]
    assert "--no_random_twin" in second["evaluation"]["argv"] and not second_eval["tasks"]["pos"].get("random")
    assert second["random_twin"] == first["random_twin"]
    assert set(first["evaluation"]["task_minutes"]["pos"]) == {"pretrained", "random"}  # measured, for --estimate
    assert set(second["evaluation"]["task_minutes"]["pos"]) == {"pretrained"}
    report = Path(outcome["report"]).read_text()
    assert "a smoke test, not a measurement" in report and "n = 1 / 1 seeds, fewer than 3" in report
    assert (results / "masking-rate.png").is_file() and (results / "transfo-xl-memory.png").is_file()

    stamp = os.stat(results / "masking-rate" / "mask-0.15-seed0.json").st_mtime_ns
    again = replicate.main(argv)  # everything present: nothing re-run, the report rebuilt
    assert again["results"] == {} and os.stat(results / "masking-rate" / "mask-0.15-seed0.json").st_mtime_ns == stamp


@pytest.mark.slow
def test_quick_runs_the_translation_row_from_its_own_results(tmp_path):
    """positions-translation: run_translation's all_results.json after training and its step-0 evaluation
    (the untrained model) become the JSON; each arm's model has its position type; no harness, no twin."""
    results, runs = tmp_path / "results", tmp_path / "runs"
    outcome = replicate.main(
        [
            "--quick",
            "--rows",
            "positions-translation",
            "--seeds",
            "0",
            "--results_dir",
            str(results),
            "--output_dir",
            str(runs),
        ]
    )
    assert set(outcome["results"]) == {f"positions-translation/{arm}-seed0.json" for arm in ("learned", "sinusoidal")}
    for key, record in outcome["results"].items():
        assert json.loads((results / key).read_text()) == record and record["script"] == "examples/run_translation.py"
        run_dir = runs / "positions-translation" / f"{record['arm']}-seed0"
        assert json.loads((run_dir / "config.json").read_text())["position_embedding_type"] == record["arm"]
        after = json.loads((run_dir / "all_results.json").read_text())
        assert record["metrics"] == {
            "seq2seq_loss": after["eval_loss"],
            "seq2seq_exact_match": after["eval_exact_match"],
            "seq2seq_token_error_rate": after["eval_token_error_rate"],
        }
        state = json.loads((run_dir / "trainer_state.json").read_text())
        step_zero = next(entry for entry in state["log_history"] if entry["step"] == 0 and "eval_loss" in entry)
        assert record["held_out"]["before"]["eval_loss"] == step_zero["eval_loss"] != after["eval_loss"]
        assert record["held_out"]["after"]["perplexity"] == pytest.approx(2.718281828 ** after["eval_loss"])
        assert record["training"]["global_step"] == state["global_step"] == 3
        assert record["training"]["examples_seen"] == 3 * state["train_batch_size"]
        assert record["random_twin"] == {} and "evaluation" not in record and record["study"]["applied"] is False
    report = Path(outcome["report"]).read_text()
    assert "| learned | transformer-mini | `position_embedding_type=learned` |" in report
    assert "held-out loss (label-smoothed)" in report and (results / "positions-translation.png").is_file()


def test_the_harness_quick_qa_schedule_fits_its_windows():
    """The span-masking row measures cloze QA: under --quick the QA windows keep the real length (the
    quick 32 tokens left no room for the 64-token stride and the questions; run_qa refused them)."""
    evaluate = evaluate_pretraining
    schedule = evaluate.schedules_for(["qa"], [], quick=True)["qa"]
    assert schedule["max_seq_length"] == evaluate.SCHEDULES["qa"]["max_seq_length"] > schedule["doc_stride"]
    assert schedule["max_train_samples"] == evaluate.QUICK["max_train_samples"]  # still the quick subset
    assert evaluate.schedules_for(["pos"], [], quick=True)["pos"]["max_seq_length"] == evaluate.QUICK["max_seq_length"]
