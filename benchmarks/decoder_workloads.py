"""Workloads for ``bench_decoders.py``: real documents and pairs, tokenizers trained on them, the
models of both sides (ours converted from transformers', identical weights) and the timed steps.

Data
- Documents (GPT-2 CLM and prompts): Jane Austen's novels (``hf_variants.data.load_corpus("austen")``),
  one paragraph = one document (lengths from a few tokens to several hundred: the case where
  padding costs and packing does not), byte-level BPE tokenizer trained on the corpus.
- Pairs (the original Transformer, T5): the rt-polarity movie-review sentences
  (``hf_variants.data.load_rt_polarity``) -> their label word ("positive" / "negative"),
  T5-style Unigram tokenizer trained on the sentences (``<pad>=0 </s>=1``).

The driver tokenises once (:func:`prepare_data`) and saves token ids and tokenizers to a folder
that every worker process reads (``BENCH_DECODER_DATA``).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import transformers

import hf_variants
from hf_variants.models.named_configs import named_config

DOCUMENTS_VOCAB = 8000  # tokenizer vocabulary; the models keep their named configs' vocabularies
PAIRS_VOCAB = 8000
LABEL_WORDS = ("negative", "positive")


# ----------------------------------------------------------------------------- data
def prepare_data(folder: Path, limit: int | None = None) -> None:
    """Tokenise the documents and pairs once and save them (JSON ids + the tokenizers) in ``folder``.
    ``limit``: use only the first paragraphs / sentences (the harness's test)."""
    from hf_variants.data import load_corpus, load_rt_polarity
    from hf_variants.tokenization import train_tokenizer

    paragraphs = list(load_corpus("austen")["text"])[:limit]
    order = list(range(len(paragraphs)))
    random.Random(0).shuffle(order)  # as a Trainer's sampler would: neighbouring paragraphs differ in length
    bpe = train_tokenizer("bpe", paragraphs, DOCUMENTS_VOCAB)
    documents = bpe([paragraphs[i] for i in order], add_special_tokens=False)["input_ids"]
    bpe.save_pretrained(folder / "documents_tokenizer")

    train = load_rt_polarity()["train"]
    train = train.select(range(min(limit or len(train), len(train))))
    unigram = train_tokenizer("unigram-t5", train["sentence"], PAIRS_VOCAB)
    sources = unigram(list(train["sentence"]))["input_ids"]  # each ends with </s>
    targets = unigram([LABEL_WORDS[label] for label in train["label"]])["input_ids"]
    unigram.save_pretrained(folder / "pairs_tokenizer")
    (folder / "ids.json").write_text(
        json.dumps({"documents": [ids for ids in documents if ids], "sources": sources, "targets": targets})
    )


@dataclass
class Data:
    documents: list[list[int]]  # Austen paragraphs, shuffled, BPE ids without specials
    sources: list[list[int]]  # movie-review sentences, Unigram ids ending with </s>
    targets: list[list[int]]  # their label words, ending with </s>
    documents_tokenizer: transformers.PreTrainedTokenizerBase
    pairs_tokenizer: transformers.PreTrainedTokenizerBase

    @classmethod
    def load(cls) -> "Data":
        folder = Path(os.environ["BENCH_DECODER_DATA"])
        ids = json.loads((folder / "ids.json").read_text())
        return cls(
            documents=ids["documents"],
            sources=ids["sources"],
            targets=ids["targets"],
            documents_tokenizer=transformers.AutoTokenizer.from_pretrained(folder / "documents_tokenizer"),
            pairs_tokenizer=transformers.AutoTokenizer.from_pretrained(folder / "pairs_tokenizer"),
        )


# ----------------------------------------------------------------------------- models
def build_models(named: str, **overrides) -> dict[str, torch.nn.Module]:
    """{"transformers": model, "ours": model} with identical weights: our class built from the named
    config (``modeling_configs/<named>``), converted to transformers' class with
    ``hf_variants.to_transformers`` (that model is the reference), and converted back with
    ``hf_variants.from_transformers``. Both run SDPA attention."""
    torch.manual_seed(0)
    config = named_config(named, **overrides)
    seed_model = (
        transformers.AutoModelForCausalLM.from_config(config)
        if not config.is_encoder_decoder
        else transformers.AutoModelForSeq2SeqLM.from_config(config)
    )
    theirs = hf_variants.to_transformers(seed_model)
    theirs.config._attn_implementation = "sdpa"
    ours = hf_variants.from_transformers(theirs)
    # transformers' LM losses have no label smoothing (the original Transformer's default is 0.1):
    # the same loss on both sides.
    ours.label_smoothing = 0.0
    return {"transformers": theirs, "ours": ours}


# ----------------------------------------------------------------------------- batches
def truncated_documents(data: Data, count: int, max_length: int) -> list[list[int]]:
    """``count`` documents, each cut to ``max_length - 1`` tokens and closed by EOS (both sides
    train on exactly these tokens)."""
    eos = data.documents_tokenizer.eos_token_id
    if count > len(data.documents):
        raise ValueError(f"{count} documents asked for, the corpus has {len(data.documents)}")
    return [document[: max_length - 1] + [eos] for document in data.documents[:count]]


def clm_feature_groups(data: Data, batch_size: int, steps: int, max_length: int) -> dict[str, list[list[dict]]]:
    """Per step, the features each side's collator receives for the same ``batch_size`` documents:
    transformers one padded row per document; ours the documents packed back to back into rows of
    ``max_length`` (``hf_variants.objectives.pack_causal_documents``, whole documents: none is split
    across rows, so both sides predict the same tokens from the same context; no EOS added: it is there)."""
    from hf_variants.objectives.clm import pack_causal_documents

    documents = truncated_documents(data, batch_size * steps, max_length)
    groups = {"transformers": [], "ours": []}
    for step in range(steps):
        chunk = documents[step * batch_size : (step + 1) * batch_size]
        groups["transformers"].append([{"input_ids": ids} for ids in chunk])
        groups["ours"].append(list(pack_causal_documents(chunk, max_length, split_documents=False)))
    return groups


def clm_collators(tokenizer) -> dict[str, Callable]:
    """transformers' usual causal-LM collator (pad to the longest, labels = ids, -100 on padding)
    and ours (packed rows: position ids restart per document, block-diagonal causal attention)."""
    from hf_variants.objectives import DataCollatorForPackedCausalLM

    # Ours passes `document_ids` to the model: each document runs as its own padding-free sequence.
    return {
        "transformers": transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False),
        "ours": DataCollatorForPackedCausalLM(tokenizer),
    }


def seq2seq_batches(data: Data, batch_size: int, steps: int, model: torch.nn.Module) -> list[dict]:
    """(source sentence -> label word) batches collated by transformers' DataCollatorForSeq2Seq
    (sources padded to the longest, labels padded with -100, decoder_input_ids from the model)."""
    if batch_size * steps > len(data.sources):
        raise ValueError(f"{steps} batches of {batch_size} need more than {len(data.sources)} pairs")
    collator = transformers.DataCollatorForSeq2Seq(data.pairs_tokenizer, model=model)
    batches = []
    for step in range(steps):
        rows = range(step * batch_size, (step + 1) * batch_size)
        batches.append(dict(collator([{"input_ids": data.sources[i], "labels": data.targets[i]} for i in rows])))
    return batches


def left_padded_prompts(token_lists: list[list[int]], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Left-padded ``input_ids`` and ``attention_mask`` (B, T) for generation."""
    width = max(len(ids) for ids in token_lists)
    input_ids = torch.full((len(token_lists), width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for row, ids in enumerate(token_lists):
        input_ids[row, width - len(ids) :] = torch.tensor(ids)
        attention_mask[row, width - len(ids) :] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def to_device(batch: dict, device: str) -> dict:
    """``batch`` with every tensor moved to ``device``."""
    return {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in batch.items()}


# ----------------------------------------------------------------------------- sides
class DeviceSide:
    """A side whose model may live on a GPU: ``synchronize()`` waits for its queued kernels, so the
    timer (measure.interleaved_times) reads the work done, not the work launched."""

    model: torch.nn.Module

    def synchronize(self) -> None:
        device = next(self.model.parameters()).device
        if device.type == "cuda":
            torch.cuda.synchronize(device)


@dataclass
class TrainingSide(DeviceSide):
    """One implementation's training step: collate (when a collator is given), forward, backward, AdamW;
    forward and loss under bf16 autocast when ``dtype`` is "bf16" (weights and AdamW stay fp32)."""

    name: str
    model: torch.nn.Module
    make_batch: Callable[[int], dict]  # step index -> batch
    optimizer: torch.optim.Optimizer
    dtype: str = "fp32"

    def loss(self, index: int, autocast: bool = True) -> torch.Tensor:
        device = next(self.model.parameters()).device
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast and self.dtype == "bf16"):
            return self.model(**self.make_batch(index)).loss

    def step(self, index: int) -> None:
        self.loss(index).backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


def training_side(
    name: str, model: torch.nn.Module, make_batch: Callable[[int], dict], dtype: str = "fp32"
) -> TrainingSide:
    model.train()
    # fused=True: the fastest AdamW on CPU (and on CUDA), the same optimizer for both sides.
    return TrainingSide(name, model, make_batch, torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True), dtype)


@dataclass
class GenerationSide(DeviceSide):
    """One implementation's greedy ``generate()`` over a fixed list of prompt batches."""

    name: str
    model: torch.nn.Module
    prompts: list[dict]  # step index % len -> generate() inputs
    generation_config: transformers.GenerationConfig

    def generate(self, index: int) -> torch.Tensor:
        with torch.inference_mode():
            return self.model.generate(
                **self.prompts[index % len(self.prompts)], generation_config=self.generation_config
            )

    def step(self, index: int) -> None:
        self.generate(index)


def greedy_config(
    new_tokens: int, pad_token_id: int, decoder_start_token_id: int | None = None
) -> transformers.GenerationConfig:
    """Greedy decoding of exactly ``new_tokens`` tokens (no EOS stop: every run does the same work)."""
    return transformers.GenerationConfig(
        do_sample=False,
        num_beams=1,
        max_new_tokens=new_tokens,
        min_new_tokens=None,
        eos_token_id=None,
        pad_token_id=pad_token_id,
        bos_token_id=None,
        decoder_start_token_id=decoder_start_token_id,
    )
