"""The pretraining pipeline end to end on a tiny config: a corpus of documents with its own held-out
split -> tokenizer trained once -> tokenized and packed once (cached) -> a few steps -> held-out
curve; the wall-clock budget (stop, save, report, resume exactly), the FLOP budget's step count, and
CPU bf16 autocast against fp32."""

from __future__ import annotations

import json
import math

import datasets
import pytest
import torch
from safetensors.torch import load_file
from test_run_pretraining import load_script

from hf_variants.objectives.budget import steps_for_flop_budget, training_step_flops

TINY = [
    "--model_name_or_path",
    "bert-tiny",
    "--vocab_size",
    "400",
    "--max_seq_length",
    "48",
    "--per_device_train_batch_size",
    "4",
    "--per_device_eval_batch_size",
    "32",
    "--learning_rate",
    "3e-3",
    "--warmup_steps",
    "0",
    "--logging_steps",
    "2",
    "--seed",
    "1",
    "--disable_tqdm",
    "true",
    "--save_steps",
    "1000",
    "--objective",
    "mlm",
]


@pytest.fixture(scope="module")
def corpus_folder(tmp_path_factory):
    """A DatasetDict of whole documents (a `text` each, paragraphs split by blank lines), the layout
    of the large pretraining corpus: 10 Austen chapters to train on, 2 held out."""
    from hf_variants.data import load_corpus

    rows = load_corpus("austen")
    chapters: dict[int, list[str]] = {}
    for document, text in zip(rows["document"][:3000], rows["text"][:3000]):
        chapters.setdefault(document, []).append(text)
    texts = ["\n\n".join(paragraphs) for paragraphs in list(chapters.values())[:12]]
    folder = tmp_path_factory.mktemp("corpus") / "documents"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": texts[:10]}),
            "validation": datasets.Dataset.from_dict({"text": texts[10:]}),
        }
    ).save_to_disk(folder)
    return folder


def curve(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "eval_curve.jsonl").read_text().splitlines()]


def test_corpus_to_held_out_curve_with_everything_built_once(tmp_path, corpus_folder):
    script, cache = load_script(), tmp_path / "cache"
    common = TINY + ["--dataset_name", str(corpus_folder), "--data_cache_dir", str(cache), "--eval_steps", "3"]
    results = script.main(common + ["--max_steps", "6", "--output_dir", str(tmp_path / "a")])
    points = curve(tmp_path / "a")
    assert [p["step"] for p in points] == [0, 3, 6]
    assert points[-1]["mlm_loss"] < points[0]["mlm_loss"] - 0.1  # the held-out loss falls
    assert 0 <= points[-1]["mlm_accuracy"] <= 1 and points[-1]["tokens"] == results["tokens_seen"] > 6 * 4 * 20
    assert points[-1]["mlm_loss"] == pytest.approx(results["after_training"]["mlm_loss"])
    logged = [
        entry
        for entry in json.loads((tmp_path / "a" / "trainer_state.json").read_text())["log_history"]
        if "loss" in entry
    ]
    assert all(entry["tokens_per_second"] > 0 and 0 <= entry["input_fraction"] < 0.5 for entry in logged)
    assert 0 < results["input_fraction"] < 0.5  # tiny steps: the input pipeline weighs far more than at full size
    entries = sorted(path.name.split("-")[0] for path in cache.iterdir())
    assert entries == ["rows", "rows", "tokenizer", "tokens", "tokens"]  # train and held-out, one tokenizer

    # Another run and another input format: the tokenizer and the token ids are reused, only rows are new.
    stamps = {path.name: path.stat().st_mtime for path in cache.iterdir()}
    script.main(common + ["--max_steps", "2", "--input_format", "doc-sentences", "--output_dir", str(tmp_path / "b")])
    after = {path.name: path.stat().st_mtime for path in cache.iterdir()}
    assert {name: after[name] for name in stamps} == stamps  # nothing rebuilt
    assert sorted(name.split("-")[0] for name in set(after) - set(stamps)) == ["rows", "rows"]  # train, held-out


def test_max_time_stops_saves_reports_and_resumes_exactly(tmp_path, corpus_folder):
    script = load_script()
    common = TINY + [
        "--dataset_name",
        str(corpus_folder),
        "--data_cache_dir",
        str(tmp_path / "cache"),
        "--max_steps",
        "8",
    ]
    full = script.main(common + ["--output_dir", str(tmp_path / "full")])
    assert not full["stopped_by_max_time"] and full["global_step"] == 8
    # 30 ms: the budget is spent after the first step or two.
    stopped = script.main(common + ["--max_time", "0.0005", "--output_dir", str(tmp_path / "timed")])
    step = stopped["global_step"]
    assert stopped["stopped_by_max_time"] and 1 <= step < 8
    assert (tmp_path / "timed" / f"checkpoint-{step}" / "model.safetensors").is_file()
    assert json.loads((tmp_path / "timed" / "eval_results.json").read_text())["global_step"] == step
    assert stopped["train_minutes"] >= 0.0005
    # Run again without the budget: it resumes from the saved step and ends where the full run did.
    resumed = script.main(common + ["--output_dir", str(tmp_path / "timed")])
    assert resumed["global_step"] == 8 and resumed["before_training"] is None
    final, again = (
        load_file(tmp_path / "full" / "model.safetensors"),
        load_file(tmp_path / "timed" / "model.safetensors"),
    )
    assert all(torch.allclose(final[k], again[k], atol=1e-6) for k in final)
    assert resumed["tokens_seen"] == full["tokens_seen"]
    assert [p["step"] for p in curve(tmp_path / "timed")] == [0, step, 8]


class _Probe(torch.nn.Module):
    """A linear layer with a loss: its FLOPs are known exactly (forward 2nab, backward 4nab)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4, bias=False)
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, inputs):
        return type("Output", (), {"loss": self.dropout(self.linear(inputs)).square().sum()})()


def test_flop_count_is_exact_and_leaves_rng_and_gradients_alone():
    model = _Probe()
    model.linear.weight.grad = torch.ones_like(model.linear.weight)
    inputs = torch.randn(16, 8, requires_grad=True)
    state = torch.get_rng_state()
    # forward x W^T, backward g W (input gradient) and g^T x (weight gradient): 3 x 2nab
    assert training_step_flops(model, {"inputs": inputs}) == 6 * 16 * 8 * 4
    assert torch.equal(torch.get_rng_state(), state) and torch.equal(model.linear.weight.grad, torch.ones(4, 8))
    assert steps_for_flop_budget(10_000, 3_000) == 3
    with pytest.raises(ValueError, match="does not buy one step"):
        steps_for_flop_budget(100, 3_000)


def test_flop_budget_sets_the_steps(tmp_path, corpus_folder):
    common = TINY + ["--dataset_name", str(corpus_folder), "--data_cache_dir", str(tmp_path / "cache")]
    results = load_script().main(common + ["--flop_budget", "1e9", "--output_dir", str(tmp_path / "f")])
    per_step = results["flops_per_step"]
    assert results["global_step"] == results["max_steps"] == math.floor(1e9 / per_step) >= 1
    with pytest.raises(ValueError, match="without --max_steps"):
        load_script().main(common + ["--flop_budget", "1e9", "--max_steps", "3", "--output_dir", str(tmp_path / "g")])


def test_trainer_autocasts_to_bf16_on_cpu(tmp_path):
    """--bf16 on a machine without an accelerator goes through Trainer's own bf16 (accelerate's CPU
    autocast): the encoder's matmuls run in bfloat16 while the weights stay float32."""
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

    import hf_variants

    config = hf_variants.named_config("bert-tiny")
    config.vocab_size, config.num_labels = 100, 2
    model = AutoModelForSequenceClassification.from_config(config)
    seen = []
    linear = next(module for module in model.modules() if isinstance(module, torch.nn.Linear))
    linear.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    rows = [{"input_ids": [1, 5, 6, 7, 2], "labels": i % 2} for i in range(8)]
    arguments = TrainingArguments(
        output_dir=str(tmp_path),
        bf16=True,
        use_cpu=True,
        max_steps=2,
        per_device_train_batch_size=4,
        report_to="none",
        save_strategy="no",
    )
    Trainer(model=model, args=arguments, train_dataset=datasets.Dataset.from_list(rows)).train()
    assert seen and set(seen) == {torch.bfloat16}
    assert all(parameter.dtype == torch.float32 for parameter in model.parameters())


def test_bf16_training_loss_follows_fp32(tmp_path, corpus_folder):
    common = TINY + [
        "--dataset_name",
        str(corpus_folder),
        "--data_cache_dir",
        str(tmp_path / "cache"),
        "--max_steps",
        "6",
        "--logging_steps",
        "1",
    ]
    script = load_script()
    losses = {}
    for precision in ("fp32", "bf16"):
        script.main(common + (["--bf16"] if precision == "bf16" else []) + ["--output_dir", str(tmp_path / precision)])
        history = json.loads((tmp_path / precision / "trainer_state.json").read_text())["log_history"]
        losses[precision] = [entry["loss"] for entry in history if "loss" in entry]
    assert len(losses["bf16"]) == len(losses["fp32"]) == 6
    # bf16 keeps 8 bits of mantissa: the losses agree to about 1%, and both fall.
    assert all(abs(a - b) < 0.02 * a for a, b in zip(losses["fp32"], losses["bf16"]))
    assert losses["bf16"][-1] < losses["bf16"][0]


def test_recipes_set_defaults_that_flags_override():
    from hf_variants.objectives.recipes import RECIPES

    script = load_script()
    args, training = script.parse_arguments(script.PretrainingArguments, ["--recipe", "roberta", "--output_dir", "x"])
    roberta = RECIPES["roberta"]
    assert (training.learning_rate, training.adam_beta2, args.max_seq_length) == (
        roberta.learning_rate,
        0.98,
        roberta.max_seq_length,
    )
    args, training = script.parse_arguments(
        script.PretrainingArguments,
        ["--recipe", "t5", "--learning_rate", "2e-3", "--max_seq_length", "64", "--output_dir", "x"],
    )
    assert (training.learning_rate, args.max_seq_length, training.optim.value) == (2e-3, 64, "adafactor")
    assert training.lr_scheduler_type.value == "inverse_sqrt" and training.weight_decay == 0.0
    with pytest.raises(ValueError, match="unknown recipe"):
        script.parse_arguments(script.PretrainingArguments, ["--recipe", "gpt9", "--output_dir", "x"])


def test_mask_position_metrics_score_only_inputs_replaced_by_the_mask(tmp_path, corpus_folder):
    """`mask_position_*` is the loss at the selected positions whose input is [MASK] (BERT's
    unchanged 10% can be copied); `--eval_mlm_probability` scores a 40% run on the 15% task."""
    script = load_script()
    common = TINY + ["--dataset_name", str(corpus_folder), "--data_cache_dir", str(tmp_path / "cache")]
    results = script.main(
        common
        + [
            "--max_steps",
            "2",
            "--mlm_probability",
            "0.4",
            "--eval_mlm_probability",
            "0.15",
            "--output_dir",
            str(tmp_path / "run"),
        ]
    )
    after = results["after_training"]
    assert results["mlm_probability"] == 0.4 and results["eval_mlm_probability"] == 0.15
    assert 0 < after["mask_position_loss"] and 0 <= after["mask_position_accuracy"] <= 1

    # The same numbers by hand: the held-out rows masked by the evaluation's collator at 15%.
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(tmp_path / "run").eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "run")
    args, _ = script.parse_arguments(script.PretrainingArguments, common + ["--output_dir", str(tmp_path / "x")])
    objective = script.OBJECTIVES["mlm"]
    _, held_out_text = script.load_text(args, minimum_documents=1, parallel=False)
    validation = script.build_examples(
        held_out_text, tokenizer, "full-sentences", 48, None, args, 2, objective, model.config
    )
    collator = script.ModelInputs(objective.make_collator(tokenizer, 0.15, False, model.config, seed=1), model, 0)
    total, count, selected_count = 0.0, 0, 0
    for start in range(0, len(validation), 32):  # the evaluation's batches (per_device_eval_batch_size 32)
        batch = collator([validation[i] for i in range(start, min(start + 32, len(validation)))])
        with torch.no_grad():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        selected = batch["labels"] != -100
        at_mask = selected & (batch["input_ids"] == tokenizer.mask_token_id)
        total += torch.nn.functional.cross_entropy(logits[at_mask], batch["labels"][at_mask], reduction="sum").item()
        count, selected_count = count + int(at_mask.sum()), selected_count + int(selected.sum())
    assert count < selected_count  # some selected inputs were kept or randomised
    assert after["mask_position_loss"] == pytest.approx(total / count, rel=1e-4)
    assert after["masked_tokens"] == selected_count  # scored at 15%, not the training's 40%


def test_corpus_sources_and_upsampling_reach_the_pretraining_corpus():
    from hf_variants.training import pretraining_data

    plain = pretraining_data.load_named_corpus("pretraining", "lee,wikipedia")
    mixed = pretraining_data.load_named_corpus("pretraining", "lee, wikipedia", "lee=3")
    assert set(plain["train"]["source"]) == {"lee", "wikipedia"}
    counts = {
        name: [list(corpus["train"]["source"]).count(name) for corpus in (plain, mixed)]
        for name in ("lee", "wikipedia")
    }
    assert counts["lee"][1] == 3 * counts["lee"][0] and counts["wikipedia"][1] == counts["wikipedia"][0]
    assert list(mixed["validation"]["text"]) == list(plain["validation"]["text"])
    for bad in ("lee=x", "=2", "lee"):
        with pytest.raises(ValueError, match="source=k"):
            pretraining_data.load_named_corpus("pretraining", "lee,wikipedia", bad)
    from hf_variants.data.pretraining_corpus import DEFAULT_SOURCES, corpus_path

    if (corpus_path(sources=DEFAULT_SOURCES + ("movie_reviews",)) / "dataset_dict.json").exists():  # built: ~6 min
        with_reviews = pretraining_data.load_named_corpus("pretraining", "+movie_reviews")
        assert "movie_reviews" in set(with_reviews["validation"]["source"]) | set(
            with_reviews["train"].select(range(2000))["source"]
        )
    with pytest.raises(ValueError, match="not of 'austen'"):
        pretraining_data.load_named_corpus("austen", "lee", None)


def test_second_task_weight_zero_leaves_the_nsp_head_untrained(tmp_path, corpus_folder):
    script = load_script()
    common = TINY + [
        "--dataset_name",
        str(corpus_folder),
        "--data_cache_dir",
        str(tmp_path / "cache"),
        "--objective",
        "mlm+nsp",
        "--weight_decay",
        "0",
        "--second_task_weight",
        "0",
    ]
    weights = {}
    for steps in (2, 4):
        results = script.main(common + ["--max_steps", str(steps), "--output_dir", str(tmp_path / f"w0-{steps}")])
        assert results["second_task_weight"] == 0
        weights[steps] = load_file(str(tmp_path / f"w0-{steps}" / "model.safetensors"))
    nsp_and_pooler = [name for name in weights[2] if "seq_relationship" in name or "pooler" in name]
    assert nsp_and_pooler
    # Adam moves a parameter only where it had a gradient: with weight 0 the NSP head and the pooler
    # (read only by NSP here) stay at their seeded initial values, while the encoder trains on.
    assert all(torch.equal(weights[2][name], weights[4][name]) for name in nsp_and_pooler)
    assert not torch.equal(
        weights[2]["bert.embeddings.word_embeddings.weight"], weights[4]["bert.embeddings.word_embeddings.weight"]
    )
    with pytest.raises(ValueError, match="has no second task"):
        script.main(
            TINY
            + [
                "--dataset_name",
                str(corpus_folder),
                "--second_task_weight",
                "0.5",
                "--max_steps",
                "1",
                "--output_dir",
                str(tmp_path / "mlm"),
            ]
        )
