"""research/select_on_validation.py on a tiny BERT checkpoint in --quick mode: every grid point is a
real evaluate_pretraining.py run (both arms, real data), each arm's point is the one with the best
mean validation score (never test), and bad grids are ValueErrors that name the problem."""

from __future__ import annotations

import json

import pytest

from research import select_on_validation
from tests.common.tiny_checkpoints import save_tiny_bert_checkpoint

pytestmark = pytest.mark.slow

POINTS = ["learning_rate=5e-4,num_train_epochs=1", "learning_rate=3e-3,num_train_epochs=1"]


@pytest.fixture(scope="module")
def select():
    return select_on_validation


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return save_tiny_bert_checkpoint(tmp_path_factory.mktemp("tiny-bert"), 7, sentences=400, vocab_size=300)


def arguments(checkpoint, output_dir, *extra):
    return [
        "--model_name_or_path",
        str(checkpoint),
        "--task",
        "sentiment",
        "--seeds",
        "2",
        "--quick",
        "--output_dir",
        str(output_dir),
        *[flag for point in POINTS for flag in ("--point", point)],
        *extra,
    ]


def test_each_arm_gets_the_point_with_its_best_mean_validation_score(select, checkpoint, tmp_path):
    # One point at a time (as two processes would share a grid): no report until both are done.
    assert select.main(arguments(checkpoint, tmp_path, "--only_point", "0")) is None
    selection = select.main(arguments(checkpoint, tmp_path, "--only_point", "1"))
    assert json.loads((tmp_path / "selection.json").read_text()) == selection
    assert [point["point"] for point in selection["points"]] == [
        {"learning_rate": 5e-4, "num_train_epochs": 1},
        {"learning_rate": 3e-3, "num_train_epochs": 1},
    ]
    for index, point in enumerate(selection["points"]):
        report = json.loads((tmp_path / f"point-{index}" / "evaluation.json").read_text())["tasks"]["sentiment"]
        assert report["schedule"]["learning_rate"] == point["point"]["learning_rate"]
        assert point["pretrained"]["test"] == report["pretrained"]["test"]
    for arm in ("pretrained", "random"):
        validation = [point[arm]["validation"]["mean"] for point in selection["points"]]
        chosen = selection["chosen"][arm]
        assert chosen["point_index"] == validation.index(max(validation))  # first on a tie
        assert chosen["test"] == selection["points"][chosen["point_index"]][arm]["test"]
    expected = selection["chosen"]["pretrained"]["test"]["mean"] - selection["chosen"]["random"]["test"]["mean"]
    assert selection["test_difference"] == pytest.approx(expected, abs=0.01)
    # --report_only chooses again from the finished points, identically.
    assert select.main(arguments(checkpoint, tmp_path, "--report_only")) == selection


def test_bad_grids_are_value_errors(select, checkpoint, tmp_path):
    with pytest.raises(ValueError, match="has no field 'learning_rat'"):
        select.main(arguments(checkpoint, tmp_path, "--point", "learning_rat=1e-4"))
    with pytest.raises(ValueError, match="expected FIELD=VALUE"):
        select.main(arguments(checkpoint, tmp_path, "--point", "learning_rate"))
    with pytest.raises(ValueError, match="listed twice"):
        select.main(arguments(checkpoint, tmp_path, "--point", POINTS[0]))
    with pytest.raises(ValueError, match="there are 2 points"):
        select.main(arguments(checkpoint, tmp_path, "--only_point", "2"))
    with pytest.raises(ValueError, match="has not been run"):
        select.main(arguments(checkpoint, tmp_path, "--report_only"))
