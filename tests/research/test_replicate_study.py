"""The replication study's shared settings and its shared random twin (issue #33): STUDY_FLAGS come
after the recipe and before the arm's flags, and the scripts' own parser keeps the arm's value;
STUDY_SIZE's config fields come before the arm's; arms of a row with the same model, config, recipe
and tokenizer share one twin (the first evaluates it, the others read its JSON); --estimate prints
the cost beside the issue's target and runs nothing."""

from __future__ import annotations

import json

import pytest

from hf_variants.models.named_configs import named_config
from research import replicate, replication_report, replication_rows
from tests.common.example_scripts import load_example_script as load_script

rows_module = replication_rows
report_module = replication_report
ROWS = rows_module.ROWS_BY_NAME
STUDY = (
    "--learning_rate",
    "2e-3",
    "--warmup_steps",
    "0.06",
    "--mlm_probability",
    "0.4",
    "--eval_mlm_probability",
    "0.15",
)


def _parse(argv):
    run_pretraining = load_script("run_pretraining")
    return run_pretraining.parse_arguments(run_pretraining.PretrainingArguments, argv)


def test_resolve_flags_keeps_the_last_value_as_argparse_does():
    flags = rows_module.resolve_flags(["--a", "1", "--switch", "--a", "2", "--b", "x"])
    assert flags == {"--a": "2", "--switch": True, "--b": "x"}


def test_study_flags_sit_between_the_recipe_and_the_arm_whose_flags_win(monkeypatch, tmp_path):
    monkeypatch.setattr(replicate, "STUDY_FLAGS", STUDY)
    args = replicate.parse_arguments(["--results_dir", str(tmp_path)])
    rate = ROWS["masking-rate"]
    argv = replicate.training_argv(rate, rate.arm("mask-0.15"), 0, args, tmp_path)
    recipe, study, own = (
        argv.index("--recipe"),
        argv.index("--mlm_probability"),
        len(argv) - argv[::-1].index("--mlm_probability") - 1,
    )
    assert recipe < study < own and argv.count("--mlm_probability") == 2
    parsed, training = _parse(argv)
    assert parsed.mlm_probability == 0.15  # the arm's own rate, given last
    assert training.learning_rate == 2e-3  # the study's, over the roberta recipe's 1e-3
    layer_norm = ROWS["layer-norm-position"]
    parsed, training = _parse(
        replicate.training_argv(layer_norm, layer_norm.arm("post-ln-no-warmup"), 0, args, tmp_path)
    )
    assert training.learning_rate == 1e-3 and training.warmup_steps == 0 and parsed.mlm_probability == 0.4
    clm = ROWS["transfo-xl-memory"]  # run_clm arms get no study flags (another script)
    assert "--learning_rate" not in replicate.training_argv(clm, clm.arms[0], 0, args, tmp_path)


def test_study_size_fields_come_before_the_arms_and_record_in_the_json(monkeypatch, tmp_path):
    size = rows_module.StudySize(
        config=(("intermediate_size", 512), ("position_embedding_type", "absolute")), max_seq_length=64
    )
    monkeypatch.setattr(replicate, "STUDY_SIZE", size)
    args = replicate.parse_arguments(["--results_dir", str(tmp_path)])
    positions = ROWS["positions"]
    sinusoidal = positions.arm("sinusoidal")
    overrides = replicate.config_overrides(sinusoidal, quick=False)
    assert overrides == "intermediate_size=512,position_embedding_type=sinusoidal"  # the arm's field wins
    config = named_config("bert-mini")
    config.update_from_string(overrides)  # the later field wins
    assert config.position_embedding_type == "sinusoidal" and config.intermediate_size == 512
    argv = replicate.training_argv(positions, sinusoidal, 0, args, tmp_path)
    assert replicate.last_flag(argv, "--max_seq_length") == "64"
    assert replicate.study_settings(sinusoidal) == {
        "applied": True,
        "flags": list(rows_module.STUDY_FLAGS),
        "config": dict(size.config),
        "max_seq_length": 64,
    }
    assert replicate.study_settings(ROWS["transfo-xl-memory"].arms[0])["applied"] is False


# ---------------------------------------------------------------------------------- the shared twin


def _key(row, arm, seed, args, tmp_path):
    return replicate.twin_key(row, seed, replicate.training_argv(row, arm, seed, args, tmp_path / arm.name), args)


def test_twin_keys_group_the_arms_that_share_model_config_and_tokenizer(tmp_path):
    args = replicate.parse_arguments(["--results_dir", str(tmp_path)])
    nsp, span, positions = ROWS["nsp"], ROWS["span-masking"], ROWS["positions"]
    assert _key(nsp, nsp.arms[0], 0, args, tmp_path) == _key(nsp, nsp.arms[1], 0, args, tmp_path)
    assert len({json.dumps(_key(span, arm, 0, args, tmp_path)) for arm in span.arms}) == 1  # objectives differ only
    assert _key(positions, positions.arms[0], 0, args, tmp_path) != _key(
        positions, positions.arms[1], 0, args, tmp_path
    )
    assert _key(nsp, nsp.arms[0], 0, args, tmp_path) != _key(nsp, nsp.arms[0], 1, args, tmp_path)  # seed
    assert [
        report_module.twin_groups(ROWS[name])
        for name in ("nsp", "input-formats", "span-masking", "positions", "albert-sharing")
    ] == [1, 1, 1, 2, 4]
    assert report_module._twin_sharing(span) == "(token, whole-word, span, span-sbo)"  # as the report says it
    assert report_module._twin_sharing(positions) == "(learned), (sinusoidal)"
    assert "--no_random_twin" in replicate.evaluation_argv(nsp, 0, args, tmp_path, tmp_path, twin=False)
    assert "--no_random_twin" not in replicate.evaluation_argv(nsp, 0, args, tmp_path, tmp_path)


def test_a_later_arm_reads_the_twin_of_the_first_arm_of_its_group(tmp_path):
    args = replicate.parse_arguments(["--results_dir", str(tmp_path)])
    nsp = ROWS["nsp"]
    first, second = nsp.arms
    key = _key(nsp, second, 0, args, tmp_path)
    assert replicate.shared_twin(nsp, second, 0, key, tmp_path) is None  # nothing run yet
    assert replicate.shared_twin(nsp, first, 0, key, tmp_path) is None  # the first arm never reads one
    path = replicate.result_path(tmp_path, nsp, first, 0)
    path.parent.mkdir(parents=True)
    record = {"twin_key": key, "random_twin_from": None, "random_twin": {"pos": 61.0, "sentiment": 50.5}}
    path.write_text(json.dumps(record))
    assert replicate.shared_twin(nsp, second, 0, key, tmp_path) == ("nsp/with-nsp-seed0.json", record)
    assert replicate.shared_twin(nsp, second, 1, key, tmp_path) is None  # another seed: its own twin
    for stale in (
        {**record, "twin_key": {**key, "bf16": True}},  # evaluated under other settings
        {**record, "random_twin": {"pos": 61.0}},  # a measure missing
        {**record, "random_twin_from": "nsp/other-seed0.json"},
    ):  # itself a reader
        path.write_text(json.dumps(stale))
        assert replicate.shared_twin(nsp, second, 0, key, tmp_path) is None


# ------------------------------------------------------------------------------------- the budget


def test_estimate_counts_one_twin_per_group_and_states_the_target(capsys, tmp_path):
    outcome = replicate.main(
        [
            "--estimate",
            "--rows",
            "nsp",
            "--arm_minutes",
            "10",
            "--seeds",
            "0",
            "1",
            "--results_dir",
            str(tmp_path / "none"),
        ]
    )
    assert outcome == {"results": {}, "report": None, "failed": []} and not (tmp_path / "none").exists()
    text = capsys.readouterr().out
    harness = report_module.HARNESS_MINUTES["pos"] + report_module.HARNESS_MINUTES["sentiment"]
    per_seed = 2 * (10 + report_module.SETUP_MINUTES["run_pretraining"] + harness) + harness  # one twin
    assert f"| nsp | 2 | 1 | pos, sentiment | {per_seed:.0f} | {per_seed * 2 / 60:.1f} |" in text
    assert "within 6 hours of the 2 cores (12 core-hours)" in text and "within it" in text


def test_estimate_of_a_row_without_harness_counts_its_script_setup(capsys, tmp_path):
    replicate.main(
        [
            "--estimate",
            "--rows",
            "positions-translation",
            "--arm_minutes",
            "5",
            "--seeds",
            "0",
            "--results_dir",
            str(tmp_path / "none"),
        ]
    )
    per_seed = 2 * (5 + report_module.SETUP_MINUTES["run_translation"])  # no harness, no twin
    assert f"| positions-translation | 2 | 0 | - | {per_seed:.0f} | {per_seed / 60:.1f} |" in capsys.readouterr().out


def test_estimate_uses_the_measured_harness_and_setup_times(tmp_path):
    measured = {
        "row": "nsp",
        "arm": "with-nsp",
        "seed": 0,
        "quick": False,
        "script": "examples/run_pretraining.py",
        "training": {"train_minutes": 10.0},
        "wall_minutes": 18.0,
        "evaluation": {
            "task_minutes": {"pos": {"pretrained": 2.0, "random": 2.0}, "sentiment": {"pretrained": 1.0, "random": 1.0}}
        },
    }
    records = {"nsp": {"with-nsp": [measured], "without-nsp": [{**measured, "quick": True, "wall_minutes": 99.0}]}}
    minutes = report_module.measured_minutes(records)  # the --quick run is left out
    assert minutes == {"harness": {"pos": 2.0, "sentiment": 1.0}, "setup": {"run_pretraining": 2.0}, "runs": 1}
    assert report_module.planned_minutes(ROWS["nsp"], 15.0, minutes) == 2 * (15 + 2 + 3) + 3
    with_budget = {"nsp": {"with-nsp": [{**measured, "budget": {"arm_minutes": 20.0}}]}}  # trained 10 of its 20 minutes
    assert report_module.measured_minutes(with_budget)["budget_used"] == 0.5
    assert (
        report_module.planned_minutes(ROWS["nsp"], 20.0, report_module.measured_minutes(with_budget))
        == 2 * (10 + 2 + 3) + 3
    )
    text = "\n".join(report_module.estimate_lines([ROWS["nsp"]], 20.0, 3, records))
    assert "measured in 1 run(s)' JSONs" in text and "over the target's 15 minutes per arm" in text


@pytest.mark.parametrize("row", rows_module.ROWS, ids=lambda row: row.name)
def test_every_row_says_what_was_checked_against_its_paper(row, tmp_path):
    assert row.checked and "verified" in row.checked.lower()
    assert row.checked in report_module.write_report(tmp_path, tmp_path / "r.md", rows=[row]).read_text()


def test_the_report_says_how_far_pretraining_got_and_how_often_an_arm_beat_its_twin():
    def run(after: float, pos: float, twin: float) -> dict:
        return {
            "metrics": {"held_out_mlm_loss": after, "pos": pos},
            "held_out": {"before": {"mlm_loss": 9.0}},
            "random_twin": {"pos": twin},
        }

    behind = "\n".join(report_module.scale_lines([run(6.5, 64.0, 65.0), run(6.7, 66.0, 65.0), run(6.6, 63.0, 65.0)]))
    assert "9.00-9.00 untrained, 6.50-6.70 after training (3 runs)" in behind
    assert "above its random twin in 1 of 3" in behind and "not yet better than random weights" in behind
    ahead = "\n".join(report_module.scale_lines([run(5.0, 80.0, 70.0), run(5.1, 81.0, 70.0)]))
    assert "in 2 of 2" in ahead and "not yet better" not in ahead
    assert report_module.scale_lines([]) == []
