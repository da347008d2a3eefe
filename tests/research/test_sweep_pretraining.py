"""research/sweep_pretraining.py: the grid of a hyperparameter sweep over run_pretraining.py."""

import pytest

from research import sweep_pretraining as sweep


def test_sweep_grid_is_every_combination():
    runs = sweep.grid_runs(["learning_rate=1e-3,3e-4", "warmup_steps=0.02,0.06,0.1"])
    assert len(runs) == 6 and {"learning_rate": "3e-4", "warmup_steps": "0.1"} in runs
    assert sweep.run_name(runs[0], 2) == "learning_rate-1e-3_warmup_steps-0.02_seed-2"
    with pytest.raises(ValueError, match="name=v1,v2"):
        sweep.grid_runs(["learning_rate"])
