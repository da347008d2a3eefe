"""A tiny pretrained-style checkpoint folder for the evaluation scripts' tests: bert-tiny
(BertForPreTraining) initialised under ``torch.manual_seed(seed)`` beside a WordPiece tokenizer
trained on the first real review sentences, saved as run_pretraining.py saves a checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch

import hf_variants
from hf_variants.data import load_named_dataset
from hf_variants.models.named_configs import named_config
from hf_variants.tokenization import train_tokenizer


def save_tiny_bert_checkpoint(folder: Path, seed: int, sentences: int, vocab_size: int) -> Path:
    """Write weights, config and tokenizer to ``folder``; the weights are the class's own
    initialisation under ``seed`` (so they equal evaluate_pretraining's random twin for that seed)."""
    texts = load_named_dataset("hf_variants/rt_polarity")["train"]["sentence"][:sentences]
    tokenizer = train_tokenizer("wordpiece-uncased", texts, vocab_size=vocab_size)
    torch.manual_seed(seed)
    hf_variants.BertForPreTraining(named_config("bert-tiny", vocab_size=len(tokenizer))).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
