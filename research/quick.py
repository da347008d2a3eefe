"""The smoke-test text and sizes the zoo and the replication study share with ``--quick``: a few
Austen documents, a tiny vocabulary and batches (never a measurement)."""

from __future__ import annotations

QUICK_TEXT = ["--corpus", "austen", "--max_documents", "12", "--vocab_size", "600", "--per_device_train_batch_size", "4",
              "--per_device_eval_batch_size", "16", "--logging_steps", "1"]
QUICK_PRETRAINING = QUICK_TEXT + ["--max_seq_length", "32", "--data_cache_dir", "none"]  # run_pretraining.py's
# The mini's fields a --quick run keeps: the tokenizer sets the vocabulary (and its ids), and the
# positions stay, as the probes read 128 tokens.
QUICK_KEEPS_MINI = ("vocab_size", "max_position_embeddings", "pad_token_id")


def quick_config_fields(tiny_config: dict | None) -> dict:
    """A spec's tiny test sizes (``VariantSpec.tiny_config``) as --quick applies them to its mini."""
    return {key: value for key, value in (tiny_config or {}).items() if key not in QUICK_KEEPS_MINI}

