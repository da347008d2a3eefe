"""benchmarks/bench_compile.py reads its workloads from the variants' SPECs (``compile_benchmark``)
and its command line still parses; nothing is timed here."""

import dataclasses

import pytest

import bench_compile  # noqa: E402  (benchmarks/ is on pytest's pythonpath)

import hf_variants
from hf_variants.configs import named_config

# The hard-coded list the SPECs replaced (#32), by value: moving the declaration changed no workload.
WORKLOADS_BEFORE_SPECS = [
    ("bert", "bert-mini", "ForSequenceClassification", False),
    ("bert", "bert-mini", "ForSequenceClassification", True),
    ("gpt", "gpt2-mini", "ForSequenceClassification", False),
    ("vit", "vit-mini", "ForImageClassification", False),
]


def test_workloads_come_from_the_specs_unchanged():
    assert bench_compile.WORKLOADS == bench_compile.workloads() == WORKLOADS_BEFORE_SPECS


@pytest.mark.parametrize("workload", WORKLOADS_BEFORE_SPECS, ids=lambda w: f"{w[1]}-{w[2]}-{w[3]}")
def test_every_workload_names_a_head_and_config_of_its_variant(workload):
    variant, config_name, head, _ = workload
    spec = hf_variants.registry.SPECS[f"hfv_{variant}"]
    assert head in spec.classes
    assert named_config(config_name).model_type == spec.model_type


def test_a_head_the_variant_lacks_is_a_value_error():
    bert = hf_variants.registry.SPECS["hfv_bert"]
    broken = dataclasses.replace(bert, compile_benchmark=(("ForImageClassification", False),))
    with pytest.raises(ValueError, match="ForImageClassification"):
        bench_compile.workloads({"hfv_bert": broken})


def test_command_line_parses(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["bench_compile.py", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        bench_compile.main()
    assert exit_info.value.code == 0 and "--quick" in capsys.readouterr().out
