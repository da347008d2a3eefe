"""The benchmark drivers read what is a variant's own from its SPEC (#32): bench_compile each
workload's mini (``SPEC.mini_config``; which heads it times is the benchmark's own table,
``COMPILE_WORKLOADS``), bench_pretraining each row's mini and objective (``SPEC.mini_config``,
``SPEC.pretraining_objective``). Each is compared once, by value, with the hard-coded table it
replaced, and each command line still parses; nothing is timed."""

import pytest

import hf_variants
from benchmarks import (
    bench_compile,
    bench_pretraining,  # noqa: E402
)
from hf_variants.models.named_configs import named_config

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
    with pytest.raises(ValueError, match="ForImageClassification"):
        bench_compile.workloads({"bert": (("ForImageClassification", False),)})


def test_an_unregistered_variant_is_a_value_error():
    with pytest.raises(ValueError, match="'bret'"):
        bench_compile.workloads({"bret": (("ForSequenceClassification", False),)})


def test_command_line_parses(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["bench_compile.py", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        bench_compile.main()
    assert exit_info.value.code == 0 and "--quick" in capsys.readouterr().out


# bench_pretraining's table before the SPECs (#32), by value: variant -> (named mini, ours, theirs, objective, like_for_like).
PRETRAINING_BEFORE_SPECS = {
    "bert": ("bert-mini", "BertForPreTraining", "BertForPreTraining", "mlm+nsp", True),
    "roberta": ("roberta-mini", "RobertaForMaskedLM", "RobertaForMaskedLM", "mlm", True),
    "spanbert": ("spanbert-mini", "SpanBertForPreTraining", "BertForMaskedLM", "span", False),
    "albert": ("albert-mini", "AlbertForPreTraining", "AlbertForPreTraining", "ngram+sop", True),
    "electra": ("electra-mini", "ElectraForPreTraining", "ElectraForMaskedLM + ElectraForPreTraining", "rtd", True),
    "xlnet": ("xlnet-mini", "XLNetLMHeadModel", "XLNetLMHeadModel", "plm", True),
    "t5": ("t5-mini", "T5ForConditionalGeneration", "T5ForConditionalGeneration", "span-corruption", True),
    "gpt": ("gpt2-mini", "GPTLMHeadModel", "GPT2LMHeadModel", "clm", True),
}


def test_pretraining_rows_read_the_specs_unchanged():
    rows = {
        name: (v.named, v.ours, v.theirs, v.objective, v.like_for_like)
        for name, v in bench_pretraining.VARIANTS.items()
    }
    assert rows == PRETRAINING_BEFORE_SPECS
    assert list(rows) == list(PRETRAINING_BEFORE_SPECS)  # the run (and results-table) order too


def test_pretraining_command_line_parses(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_pretraining.main(["--help"])
    assert exit_info.value.code == 0 and "--variants" in capsys.readouterr().out
