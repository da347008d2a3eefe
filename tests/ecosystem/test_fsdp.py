"""FSDP2 on 2 CPU processes (gloo), started with ``accelerate launch`` as in the DDP test
(tests/test_examples_ddp.py): every variant's model sharded per layer class (its
``_no_split_modules``) gives the gradients of the unsharded model (see fsdp_worker.py).

accelerate's own FSDP plugin (``distributed_type: FSDP``, what Trainer uses) is not reachable on
the CPU: with ``use_cpu`` AcceleratorState takes the MULTI_CPU/DDP branch and never reads
ACCELERATE_USE_FSDP, so Trainer silently wraps DDP. The worker therefore calls torch's
``fully_shard`` directly; the Trainer + FSDP config (examples/accelerate/fsdp.yaml) is for a GPU
session (docs/ecosystem.md, "Beyond one device").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_variants.registry import SPECS
from tests.common.launch import TWO_PROCESS_LAUNCH, assert_succeeded, run_processes

pytestmark = pytest.mark.slow

WORKER = Path(__file__).resolve().parent / "fsdp_worker.py"


def test_every_variant_trains_sharded_per_layer_with_unsharded_gradients(tmp_path):
    report_path = tmp_path / "report.json"
    assert_succeeded(run_processes(TWO_PROCESS_LAUNCH + [str(WORKER), str(report_path)]))
    report = json.loads(report_path.read_text())
    assert report.pop("world_size") == 2
    assert {name.split("-")[0] for name in report} == {spec.name for spec in SPECS.values()}
    for name, result in report.items():
        assert result["sharded"], name
        assert result["units"] >= 1, name
        assert result["max_grad_diff"] <= 1e-5, (name, result)
