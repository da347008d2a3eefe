"""Real 2-process DDP (gloo, CPU) with ``accelerate launch``: world size 2, the loss is not
scaled by the number of processes, and the distributed evaluation (which pads the last batch
with repeated samples) gives the same metrics as a single-process evaluation of the same
checkpoint."""

from __future__ import annotations

import json
import math

import pytest
from test_examples_processing import (
    EXAMPLES_DIR,
    MINILM,
    common_args,
    label_names_as_text,
    load_script,
    shuffled_rows,
    write_json_lines,
)

from hf_variants import BertForSequenceClassification
from hf_variants.data import load_named_dataset
from tests.common.launch import TWO_PROCESS_LAUNCH, assert_succeeded, run_processes

pytestmark = pytest.mark.slow

EVAL_EXAMPLES = 101  # odd: two processes must pad one duplicate, which the gather must drop


def test_two_process_training_and_evaluation_match_a_single_process(tmp_path):
    reviews = load_named_dataset("hf_variants/rt_polarity")
    names = reviews["train"].features["label"].names
    train = write_json_lines(
        tmp_path / "train.jsonl", label_names_as_text(shuffled_rows(reviews["train"], 64), "label", names)
    )
    validation = write_json_lines(
        tmp_path / "validation.jsonl",
        label_names_as_text(shuffled_rows(reviews["validation"], EVAL_EXAMPLES), "label", names),
    )
    ddp_dir, single_dir = tmp_path / "ddp", tmp_path / "single"
    command = TWO_PROCESS_LAUNCH + [
        str(EXAMPLES_DIR / "run_glue.py"),
        "--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", train, "--validation_file", validation,
        "--do_train", "--do_eval", "--max_seq_length", "64", "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "8",
        "--max_steps", "4", "--logging_steps", "1", "--save_strategy", "no", "--seed", "0", "--ddp_find_unused_parameters", "false",
    ] + common_args(ddp_dir)  # fmt: skip
    completed = run_processes(command)
    assert_succeeded(completed)
    assert "process rank 1 of 2" in completed.stdout + completed.stderr

    ddp = json.loads((ddp_dir / "all_results.json").read_text())
    assert ddp["world_size"] == 2
    assert ddp["eval_samples"] == EVAL_EXAMPLES
    # A randomly initialised classifier starts at a loss of ln 2 per example. Scaling by the
    # process count (what Trainer does for models that accept num_items_in_batch) would log ~1.39.
    assert BertForSequenceClassification.accepts_loss_kwargs is False
    log_history = json.loads((ddp_dir / "trainer_state.json").read_text())["log_history"]
    first_loss = next(entry["loss"] for entry in log_history if "loss" in entry)
    assert abs(first_loss - math.log(2)) < 0.1, first_loss

    load_script("run_glue").main(
        ["--model_name_or_path", str(ddp_dir), "--validation_file", validation, "--do_eval", "--max_seq_length", "64",
         "--per_device_eval_batch_size", "8"] + common_args(single_dir)
    )  # fmt: skip
    single = json.loads((single_dir / "all_results.json").read_text())
    assert single["world_size"] == 1 and single["eval_samples"] == EVAL_EXAMPLES
    assert single["eval_accuracy"] == ddp["eval_accuracy"]
    assert single["eval_f1"] == ddp["eval_f1"]
    # Trainer averages per-batch mean losses, so the padded last batch moves the loss slightly.
    assert single["eval_loss"] == pytest.approx(ddp["eval_loss"], rel=1e-2)


@pytest.mark.parametrize(
    ("name", "distributed_type", "processes"),
    [("single_cpu", "NO", 1), ("cpu_2proc", "MULTI_GPU", 2), ("multi_gpu_ddp", "MULTI_GPU", 2), ("fsdp", "FSDP", 2)],
)
def test_accelerate_configs_load(name, distributed_type, processes):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(EXAMPLES_DIR / "accelerate" / f"{name}.yaml"))
    assert config.distributed_type == distributed_type
    assert config.num_processes == processes
    if name == "fsdp":
        # No class named: accelerate wraps each model's _no_split_modules (BERT's BertLayer, GPT's
        # GPTBlock, XLNetLayer), which must be classes the model holds.
        assert "fsdp_transformer_layer_cls_to_wrap" not in config.fsdp_config
        from accelerate.utils.dataclasses import get_module_class_from_name

        from hf_variants.registry import SPECS
        from tests.common.tiny_variants import tiny_config

        for model_type in ("hfv_bert", "hfv_roberta", "hfv_xlnet"):
            model = SPECS[model_type].classes["Model"](tiny_config(SPECS[model_type]))
            assert all(get_module_class_from_name(model, cls) is not None for cls in model._no_split_modules), (
                model_type
            )
