"""Short version of benchmarks/soak_training.py: training steps do not grow memory after warm-up.

The full run (1,000 steps, its numbers in benchmarks/RESULTS.md, "Long-run memory"):
``PYTHONPATH=. python benchmarks/soak_training.py --steps 1000 --warmup 200``.
"""

import pytest

from benchmarks import soak_training  # noqa: E402

pytestmark = pytest.mark.slow

# First-seen batch shapes still grow the allocator's pools a little after warm-up (random lengths
# 8..48); a leak of one step's activations or outputs would be far above this over 200 steps.
RSS_BOUND_MIB = 16.0
OBJECT_BOUND = 10  # live objects of one type gained over the second half (none expected)


def test_training_steps_do_not_grow_memory():
    result = soak_training.soak(steps=300, warmup=100, sample_every=50)
    assert result["rss_growth_mib"] <= RSS_BOUND_MIB, result["rss_mib_samples"]
    grown = {name: count for name, count in result["object_growth_second_half"].items() if count > OBJECT_BOUND}
    assert not grown, f"live Python objects grew over the second half: {grown}"
    assert result["loss_first_last"][1] < result["loss_first_last"][0]  # it really trained
