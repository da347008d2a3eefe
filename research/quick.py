"""The smoke-test text and sizes the zoo and the replication study share with ``--quick``: a few
Austen documents, a tiny vocabulary and batches (never a measurement)."""

from __future__ import annotations

QUICK_TEXT = [
    "--corpus",
    "austen",
    "--max_documents",
    "12",
    "--vocab_size",
    "600",
    "--per_device_train_batch_size",
    "4",
    "--per_device_eval_batch_size",
    "16",
    "--logging_steps",
    "1",
]
QUICK_PRETRAINING = QUICK_TEXT + ["--max_seq_length", "32", "--data_cache_dir", "none"]  # run_pretraining.py's
# --quick shrinks each variant's mini to these sizes (variant name -> config fields): hidden 32, 2
# layers and heads, no dropout, plus the fields each family ties to its sizes. The mini's vocabulary
# (set by the tokenizer, with its ids) and positions stay, as the probes read 128 tokens.
QUICK_BASE_SIZES: dict[str, object] = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=37,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)
QUICK_SIZES: dict[str, dict[str, object]] = {
    "albert": {**QUICK_BASE_SIZES, "embedding_size": 16, "classifier_dropout": 0.0},
    "bert": QUICK_BASE_SIZES,
    "electra": {**QUICK_BASE_SIZES, "embedding_size": 16},
    "gpt": QUICK_BASE_SIZES,
    "roberta": QUICK_BASE_SIZES,
    "spanbert": QUICK_BASE_SIZES,
    "t5": {**QUICK_BASE_SIZES, "decoder_layers": 2, "head_dim": 16, "ffn_dropout_prob": 0.0},
    "transfo_xl": {**QUICK_BASE_SIZES, "head_dim": 16, "mem_len": 4},
    "transformer": {**QUICK_BASE_SIZES, "decoder_layers": 2},
    "vit": {
        **QUICK_BASE_SIZES,
        "image_size": 8,
        "patch_size": 4,
        "encoder_stride": 4,
        "decoder_hidden_size": 32,
        "decoder_num_hidden_layers": 1,
        "decoder_num_attention_heads": 2,
        "decoder_intermediate_size": 37,
    },
    "xlm": QUICK_BASE_SIZES,
    "xlnet": {**QUICK_BASE_SIZES, "mem_len": 4, "summary_last_dropout": 0.0},
}


def quick_config_fields(variant: str) -> dict[str, object]:
    """The config fields --quick applies to ``variant``'s mini ("bert"); {} for a variant without sizes."""
    return dict(QUICK_SIZES.get(variant, {}))
