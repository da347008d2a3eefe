"""research.distillation_table: issue 45's table is computed from the run JSONs, and the committed
docs/distillation/table.md is what the committed JSONs give."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from research.distillation_table import (
    TABLE_FILE,
    document,
    read_run,
    read_runs,
    replication_entry,
    table,
    verdicts,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "distillation"


def _write(folder: Path, name: str, **results: float) -> None:
    (folder / name).write_text(json.dumps(results))


def test_committed_table_is_the_committed_runs(monkeypatch):
    assert (DOCS / TABLE_FILE).read_text() == document(read_runs(DOCS)), (
        "docs/distillation/table.md is stale: run `python -m research.distillation_table docs/distillation --write`"
    )
    # docs/replication.md carries the same verdicts as its 'distillation' row (python -m research.replicate --report).
    monkeypatch.chdir(DOCS.parents[1])  # the report names the folder as the repository-relative docs/distillation
    summary_line, section = replication_entry(Path("docs/distillation"))
    report = (DOCS.parent / "replication.md").read_text()
    assert summary_line in report and "\n".join(section) in report, "docs/replication.md is stale"


def test_rows_mean_and_std_over_seeds(tmp_path):
    _write(tmp_path, "teacher-minilm-s42.json", predict_accuracy=0.85, eval_accuracy=0.86)
    for seed, test in [(42, 0.70), (43, 0.74), (44, 0.75)]:
        _write(tmp_path, f"bert-mini-random-finetuned-steps4000-s{seed}.json", predict_accuracy=test, eval_accuracy=0.7)
    _write(
        tmp_path,
        "bert-mini-random-distilled-steps4000-s42.json",
        test_accuracy=0.77,
        eval_accuracy=0.78,
        test_speedup=2.0,
    )
    _write(
        tmp_path,
        "bert-mini-random-distilled-steps4000-s43.json",
        test_accuracy=0.79,
        eval_accuracy=0.80,
        test_speedup=3.0,
    )
    _write(
        tmp_path, "bert-mini-random-distilled-labelled-imdb-steps4000-s42.json", test_accuracy=0.8, eval_accuracy=0.8
    )
    _write(tmp_path, "bert-mini-pretrained-distilled-steps4000-s42.json", test_accuracy=0.6, eval_accuracy=0.6)
    rows = table(read_runs(tmp_path)).splitlines()[2:]
    assert len(rows) == 5 and rows[0].startswith("| (a) | minilm |")
    std = 100 * statistics.stdev([0.70, 0.74, 0.75])
    assert rows[1] == (
        f"| (b) | bert-mini | 4000 steps |  | 3 | 70.00 (s42) / 74.00 (s43) / 75.00 (s44) | 73.00 ± {std:.2f} | 70.00 |  |"
    )
    assert (
        rows[2]
        == "| (d) | bert-mini | 4000 steps | default | 2 | 77.00 (s42) / 79.00 (s43) | 78.00 ± 1.41 | 79.00 | 2.50x |"
    )
    assert rows[3].startswith("| (d) | bert-mini | 4000 steps | labelled-imdb | 1 | 80.00 (s42) | 80.00 (one seed) |")
    assert rows[4].startswith("| (e) | bert-mini | 4000 steps | default | 1 |")
    run = read_run(tmp_path / "bert-mini-random-distilled-labelled-imdb-steps4000-s42.json")
    assert (run.arm, run.transfer, run.budget, run.seed) == ("(d)", "labelled-imdb", "steps4000", 42)


def test_bad_names_and_missing_accuracies_are_value_errors(tmp_path):
    _write(tmp_path, "bert-mini-s42.json", test_accuracy=0.5, eval_accuracy=0.5)
    with pytest.raises(ValueError, match="not a run name"):
        read_run(tmp_path / "bert-mini-s42.json")
    _write(tmp_path, "bert-mini-random-distilled-steps10-s1.json", eval_accuracy=0.5)
    with pytest.raises(ValueError, match="no test accuracy"):
        read_run(tmp_path / "bert-mini-random-distilled-steps10-s1.json")


def test_verdicts_follow_the_replication_rule(tmp_path):
    # (d) 78 +- 1 beats (b) 73 +- 0.5 (d = 5 > s = 1); (e) 78.5 +- 1 vs (d): d = 0.5 <= s = 1, not at this scale;
    # (c) has two seeds only: every prediction with (c) is "not run".
    for seed, b, d, e in [(42, 0.725, 0.77, 0.775), (43, 0.73, 0.78, 0.785), (44, 0.735, 0.79, 0.795)]:
        _write(tmp_path, f"bert-mini-random-finetuned-steps4000-s{seed}.json", predict_accuracy=b, eval_accuracy=b)
        _write(tmp_path, f"bert-mini-random-distilled-steps4000-s{seed}.json", test_accuracy=d, eval_accuracy=d)
        _write(tmp_path, f"bert-mini-pretrained-distilled-steps4000-s{seed}.json", test_accuracy=e, eval_accuracy=e)
    for seed in (42, 43):
        _write(
            tmp_path, f"bert-mini-pretrained-finetuned-steps4000-s{seed}.json", predict_accuracy=0.7, eval_accuracy=0.7
        )
    # A run on another transfer set is not one of these arms.
    _write(
        tmp_path, "bert-mini-random-distilled-labelled-imdb-steps4000-s42.json", test_accuracy=0.9, eval_accuracy=0.9
    )
    got = {(str(v["prediction"].first), v["prediction"].second): v["verdict"] for v in verdicts(read_runs(tmp_path))}
    assert got == {
        ("(d)", "(b)"): "held",
        ("(d)", "(c)"): "not run",
        ("(e)", "(d)"): "not at this scale",
        ("(e)", "(c)"): "not run",
    }
    text = document(read_runs(tmp_path))
    assert "Best student arm with 3 seeds or more: (e) bert-mini, 4000 steps, transfer set default: 78.50" in text
    assert "the issue's bar of 80%: not reached." in text
    # A budget with one arm alone is no comparison; the replication report's row reads the largest budget.
    _write(tmp_path, "bert-mini-random-distilled-steps1000-s42.json", test_accuracy=0.7, eval_accuracy=0.7)
    assert {v["budget"] for v in verdicts(read_runs(tmp_path))} == {"steps4000"}
    summary_line, section = replication_entry(tmp_path)
    assert summary_line.startswith("| [distillation](#distillation) | Turc et al. 2019")
    assert "bert-mini (d) > (b): held; bert-mini (d) > (c): not run;" in summary_line
    assert section[0] == "## distillation" and any("(e) > (d) | 78.50 ± 1.00 (n = 3)" in line for line in section)
