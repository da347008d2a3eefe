"""examples/run_clm.py end to end on real Austen chapters (GPT with packed documents,
Transformer-XL with segment-level recurrence): the held-out perplexity falls, the output folder
loads with the Auto classes, continuations are sampled; evaluation with memory reads the
previous segment of the same stream (equal to one causal run over both segments, different from
no memory, and equal to segments run alone at mem_len 0); a real 2-process DDP run of
Transformer-XL keeps each process's segments in order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

import hf_variants  # noqa: F401  (registers the model types)
from hf_variants import GPTConfig, GPTLMHeadModel, TransfoXLConfig, TransfoXLLMHeadModel
from hf_variants.objectives import DataCollatorForPackedCausalLM, SegmentStreamDataset
from tests.common.example_scripts import load_example_script
from tests.common.launch import TWO_PROCESS_LAUNCH, assert_succeeded, run_processes
from tests.common.paths import EXAMPLES_DIR
from tests.common.tiny_variants import TINY_CONFIGS

SCRIPT = EXAMPLES_DIR / "run_clm.py"
COMMON = [
    "--corpus",
    "austen",
    "--max_documents",
    "12",
    "--vocab_size",
    "600",
    "--max_seq_length",
    "32",
    "--per_device_train_batch_size",
    "4",
    "--per_device_eval_batch_size",
    "4",
    "--learning_rate",
    "2e-3",
    "--warmup_steps",
    "0.1",
    "--logging_steps",
    "4",
    "--save_strategy",
    "no",
    "--seed",
    "0",
    "--max_eval_tokens",
    "2000",
    "--num_samples",
    "2",
    "--prompt_length",
    "8",
    "--sample_length",
    "6",
    "--disable_tqdm",
    "true",
]


def load_script():
    return load_example_script("run_clm")


def logged_losses(output_dir: Path) -> list[float]:
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return [entry["loss"] for entry in history if "loss" in entry]


@pytest.mark.parametrize("model_name", ["gpt2-mini", "openai-gpt", "transfo-xl-mini"])
def test_training_lowers_held_out_perplexity_and_the_output_loads(tmp_path, model_name):
    size = ["--max_steps", "16"]
    if model_name == "openai-gpt":  # GPT-1's post-LN block: the 117M named config, shrunk to test size
        size += ["--config_overrides", "num_hidden_layers=2,hidden_size=64,num_attention_heads=4,intermediate_size=128"]
    results = load_script().main(["--model_name_or_path", model_name, *COMMON, *size, "--output_dir", str(tmp_path)])
    before, after = results["before_training"], results["after_training"]
    assert results["global_step"] == 16
    assert after["perplexity"] < 0.8 * before["perplexity"], (before, after)
    assert after["tokens"] == before["tokens"] > 1000
    assert 1 < results["unigram_baseline_perplexity"] < before["perplexity"]  # random weights: about uniform
    losses = logged_losses(tmp_path)
    assert len(losses) == 4 and losses[-1] < losses[0] - 0.3, losses
    assert json.loads((tmp_path / "eval_results.json").read_text())["after_training"] == after

    samples = json.loads((tmp_path / "samples.json").read_text())
    assert samples == results["samples"] and len(samples) >= 1
    assert all(sample["prompt"] and sample["sampled"] and sample["real"] for sample in samples)

    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert model.config.vocab_size == len(tokenizer)
    ids = tokenizer("It is a truth universally acknowledged", return_tensors="pt", add_special_tokens=False).input_ids
    assert model(ids).logits.shape == (1, ids.shape[1], len(tokenizer))
    if model_name == "transfo-xl-mini":
        table = results["by_memory_length"]
        assert [row["mem_len"] for row in table] == [0, 32, 128]
        assert results["training_mem_len"] == model.config.mem_len
        assert len({row["perplexity"] for row in table}) == 3  # memory changes the prediction


def tiny_transfo_xl() -> TransfoXLLMHeadModel:
    torch.manual_seed(0)
    config = TransfoXLConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        head_dim=8,
        intermediate_size=37,
        mem_len=6,
        clamp_len=-1,
        initializer_range=0.5,
    )  # large weights: the context visibly matters
    return TransfoXLLMHeadModel(config).eval()


def negative_log_likelihood(logits: torch.Tensor, targets: torch.Tensor) -> float:
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()


def test_evaluation_with_memory_reads_the_previous_segment_of_each_stream():
    script, model = load_script(), tiny_transfo_xl()
    segment, streams = 6, 3
    text = np.random.default_rng(0).integers(0, 99, size=streams * (2 * segment + 1))
    segments = SegmentStreamDataset(text, segment, batch_size=streams)  # two segments per stream
    assert segments.num_segments == 2
    rows = torch.from_numpy(segments.streams)
    with torch.no_grad():
        # Memory of one segment: segment 2 sees all of segment 1, so the whole pass equals one
        # causal run over both segments of each stream.
        whole = model(rows[:, : 2 * segment], mem_len=0).logits
        expected = negative_log_likelihood(whole, rows[:, 1 : 2 * segment + 1])
        # No memory: each segment alone.
        alone = sum(
            negative_log_likelihood(model(rows[:, s : s + segment], mem_len=0).logits, rows[:, s + 1 : s + segment + 1])
            for s in (0, segment)
        )
    with_memory = script.memory_perplexity(model, segments, mem_len=segment)
    without = script.memory_perplexity(model, segments, mem_len=0)
    assert with_memory["tokens"] == without["tokens"] == streams * 2 * segment
    assert with_memory["loss"] * with_memory["tokens"] == pytest.approx(expected, rel=1e-5)
    assert without["loss"] * without["tokens"] == pytest.approx(alone, rel=1e-5)
    assert abs(with_memory["loss"] - without["loss"]) > 0.05


def test_the_generation_task_is_scored_before_and_after_and_a_finished_run_is_rescored_with_its_twin(tmp_path):
    script = load_script()
    argv = [
        "--model_name_or_path",
        "gpt2-mini",
        *COMMON,
        "--max_steps",
        "4",
        "--output_dir",
        str(tmp_path),
        "--generation_prompts",
        "5",
        "--generation_length",
        "3",
    ]
    results = script.main(argv)
    for key in ("generation_before", "generation_after"):
        scores = results[key]
        assert (scores["prompts"], scores["prompt_length"], scores["generation_length"]) == (5, 8, 3)
        assert 0 <= scores["token_accuracy"] <= 100 and scores["first_token_accuracy"] in {0, 20, 40, 60, 80, 100}
    written = json.loads((tmp_path / "eval_results.json").read_text())
    assert written["generation_after"] == results["generation_after"]
    # The twin's scores are kept with its loss, for a resumed run (which does not evaluate it again).
    kept = json.loads((tmp_path / script.BEFORE_TRAINING_FILE).read_text())
    assert kept["generation"] == results["generation_before"] and kept["loss"] == results["before_training"]["loss"]
    # A finished run is rescored: the twin rebuilt from the run's arguments has the run's untrained
    # weights (its held-out loss is the run's before-training loss), and the scores come out the same.
    args, _, twin, tokenizer, validation = script.rebuild_twin(argv)
    collator = DataCollatorForPackedCausalLM(tokenizer, return_document_ids=False, return_attention_bias=True)
    held_out = script.packed_rows(validation, tokenizer, args, limit_tokens=True)
    assert script.packed_perplexity(twin, held_out, collator, 4)["loss"] == pytest.approx(
        results["before_training"]["loss"], rel=1e-6
    )
    assert script.generation_of_finished_run(argv) == {
        key: results[key] for key in ("generation_before", "generation_after")
    }
    with pytest.raises(ValueError, match="generation_prompts"):
        script.generation_windows(validation, tokenizer, script.ClmArguments(generation_prompts=10**6))
    with pytest.raises(ValueError, match="no model.safetensors"):
        script.rebuild_twin([*argv[:-6], "--output_dir", str(tmp_path / "none")])


def test_a_resumed_run_reports_the_twins_generation_scores_it_kept(tmp_path):
    # The first call stops at a checkpoint; the second resumes from it (no new evaluation before
    # training) and still reports the twin's scores, read from before_training.json.
    script = load_script()
    argv = [
        "--model_name_or_path",
        "gpt2-mini",
        *COMMON,
        "--output_dir",
        str(tmp_path),
        "--save_strategy",
        "steps",
        "--save_steps",
        "2",
        "--generation_prompts",
        "4",
        "--generation_length",
        "3",
    ]
    first = script.main(argv + ["--max_steps", "2"])
    kept_path = tmp_path / script.BEFORE_TRAINING_FILE
    kept = json.loads(kept_path.read_text())
    kept["generation"]["token_accuracy"] = 12.5  # a marker: the resumed run must read it, not measure again
    kept_path.write_text(json.dumps(kept))
    resumed = script.main(argv + ["--max_steps", "4"])
    assert resumed["global_step"] == 4 and resumed["before_training"] == first["before_training"]
    assert resumed["generation_before"] == {**first["generation_before"], "token_accuracy": 12.5}
    assert "generation" not in resumed["before_training"]


@pytest.mark.parametrize("recurrent", [False, True])
def test_greedy_continuations_are_the_argmax_of_rerunning_the_whole_text(recurrent):
    # GPT through generate(), Transformer-XL through its memory loop: each new token is the most
    # likely one given the prompt and the tokens generated so far.
    script = load_script()
    if recurrent:
        model = tiny_transfo_xl()
    else:
        torch.manual_seed(0)
        model = GPTLMHeadModel(GPTConfig(**TINY_CONFIGS["gpt"], initializer_range=0.5)).eval()
    prompts = torch.randint(1, 99, (3, 5), generator=torch.Generator().manual_seed(0))
    generated = script.greedy_continuations(model, prompts, 4)
    ids = prompts
    with torch.no_grad():
        for _ in range(4):
            logits = model(ids, mem_len=0).logits if recurrent else model(ids).logits
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    expected = script.end_at_first_eos(ids[:, 5:], getattr(model.config, "eos_token_id", None))
    assert generated.shape == (3, 4) and torch.equal(generated, expected)


def test_continuation_scores_end_each_continuation_at_its_first_eos():
    script = load_script()
    generated = torch.tensor([[5, 9, 7], [1, 0, 3], [0, 0, 4]])
    assert script.end_at_first_eos(generated, None) is generated
    ended = script.end_at_first_eos(generated, 0)  # EOS is 0: everything after a row's first 0 is -1
    assert ended.tolist() == [[5, 9, 7], [1, 0, -1], [0, -1, -1]]
    real = np.array([[5, 6, 7], [1, 2, 3], [0, 0, 4]])
    scores = script.continuation_scores(ended.numpy(), real)  # row 2's last token counts as wrong; row 3: 1 of 3
    assert scores["token_accuracy"] == pytest.approx(100 * 4 / 9) and scores["first_token_accuracy"] == 100
    assert script.continuation_scores(generated.numpy(), real)["token_accuracy"] == pytest.approx(100 * 7 / 9)


def test_unigram_baseline_is_the_frequency_model():
    script = load_script()
    # Add-one counts 4, 2, 1, 1 of 8: held-out tokens 0 and 1 cost -log(4/8) and -log(2/8).
    baseline = script.unigram_perplexity(np.array([0, 0, 0, 1]), np.array([0, 1]), vocab_size=4)
    assert baseline == pytest.approx(np.exp((np.log(2) + np.log(4)) / 2))


def test_bad_arguments_are_refused(tmp_path):
    script = load_script()
    with pytest.raises(ValueError, match="not causal LM"):
        script.main(
            ["--model_name_or_path", "bert-tiny", *COMMON, "--max_steps", "1", "--output_dir", str(tmp_path / "a")]
        )
    with pytest.raises(ValueError, match="segment-level recurrence"):
        script.main(
            [
                "--model_name_or_path",
                "gpt2-mini",
                *COMMON,
                "--mem_len",
                "8",
                "--max_steps",
                "1",
                "--output_dir",
                str(tmp_path / "b"),
            ]
        )
    with pytest.raises(ValueError, match="eval_mem_lens"):
        script.memory_lengths(script.ClmArguments(eval_mem_lens="0,one"))


@pytest.mark.slow
def test_two_process_ddp_transfo_xl_keeps_each_process_segments_in_order(tmp_path):
    """accelerate launch, 2 processes (gloo on CPU): each process owns its streams; the trainer
    raises if a batch does not continue the previous one, so finishing proves the order."""
    command = TWO_PROCESS_LAUNCH + [
        str(SCRIPT),
        "--model_name_or_path",
        "transfo-xl-mini",
        *COMMON,
        "--max_steps",
        "6",
        "--use_cpu",
        "true",
        "--ddp_find_unused_parameters",
        "false",
        "--output_dir",
        str(tmp_path / "ddp"),
    ]
    assert_succeeded(run_processes(command))
    results = json.loads((tmp_path / "ddp" / "eval_results.json").read_text())
    assert results["world_size"] == 2 and results["global_step"] == 6
    assert results["after_training"]["perplexity"] < results["before_training"]["perplexity"]
