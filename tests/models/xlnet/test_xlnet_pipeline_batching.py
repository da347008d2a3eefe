"""pipeline("text-classification") on a saved tiny XLNet classifier with its own tokenizer
(``unigram-xlnet``: ``A <sep> <cls>``, left padding) scores a sentence identically alone and in a
batch of 4 with longer sentences: with hf_variants imported, and through the checkpoint's remote
code in a fresh interpreter that cannot import hf_variants (issue 43: 0.009 apart at batch_size=2
with the ALBERT-style right-padded tokenizer)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
import torch
from transformers import pipeline

import hf_variants
from hf_variants.models.xlnet import SPEC
from hf_variants.tokenization import train_tokenizer
from tests.common.austen_data import austen_corpus
from tests.common.tiny_variants import tiny_config

SENTENCE = "Emma smiled."
# Longer sentences share its batch of 4, so the pipeline pads it.
OTHERS = [
    "It is a truth universally acknowledged, that a single man must be in want of a wife.",
    "Mr. Bennet was so odd a mixture of quick parts and sarcastic humour.",
    "She was the youngest of the two daughters of a most affectionate father.",
]
ATOL = 1e-6


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("xlnet-classifier")
    tokenizer = train_tokenizer(SPEC.tokenizer_kind, austen_corpus()["text"][:400], 500)
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    # xlnet-mini's depth (4 layers). The heads return transformers' time-first ``mems`` (one (M, B, H)
    # tensor per layer), which the pipeline unbatches by indexing the per-layer tuple with the row:
    # a batch larger than the layer count raises IndexError there (transformers' XLNet too).
    config = tiny_config(
        SPEC,
        num_hidden_layers=4,
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(0)
    hf_variants.XLNetForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def scores_of(classify) -> dict[str, list[list[float]]]:
    """The sentence's label scores alone, and in a batch of 4 (first, last), label-sorted."""

    def as_list(result):
        return [entry["score"] for entry in sorted(result, key=lambda entry: entry["label"])]

    batch = [SENTENCE, *OTHERS]
    in_batch = classify(batch, batch_size=4, top_k=None)
    at_end = classify([*OTHERS, SENTENCE], batch_size=4, top_k=None)
    return {
        "alone": as_list(classify(SENTENCE, top_k=None)),
        "first_of_4": as_list(in_batch[0]),
        "last_of_4": as_list(at_end[-1]),
    }


def assert_identical_alone_and_batched(scores: dict[str, list[float]]) -> None:
    for where in ("first_of_4", "last_of_4"):
        assert scores[where] == pytest.approx(scores["alone"], abs=ATOL, rel=0), where


def test_the_tokenizer_pads_left_and_writes_cls_last(checkpoint):
    classify = pipeline("text-classification", model=str(checkpoint), device="cpu")
    encoded = classify.tokenizer([SENTENCE, OTHERS[0]], padding=True)
    assert classify.tokenizer.padding_side == "left"
    assert encoded["input_ids"][0][0] == classify.tokenizer.pad_token_id  # the short row is padded in front
    assert all(
        row[-2:] == [classify.tokenizer.sep_token_id, classify.tokenizer.cls_token_id] for row in encoded["input_ids"]
    )


def test_pipeline_scores_a_sentence_identically_alone_and_at_batch_size_4(checkpoint):
    classify = pipeline("text-classification", model=str(checkpoint), device="cpu")
    assert type(classify.model) is hf_variants.XLNetForSequenceClassification
    assert_identical_alone_and_batched(scores_of(classify))


# Run in a fresh interpreter; SCORING is scores_of's source with the sentences (this module imports
# hf_variants, so the child cannot import it).
REMOTE_CODE_SCRIPT = r"""
import importlib.abc, json, sys
class BlockHfVariants(importlib.abc.MetaPathFinder):  # the checkpoint's own code must be enough
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "hf_variants":
            raise ImportError("hf_variants must not be needed to load remote code")
sys.meta_path.insert(0, BlockHfVariants())
from transformers import pipeline
SCORING
classify = pipeline("text-classification", model=sys.argv[1], device="cpu", trust_remote_code=True)
print(json.dumps({"module": type(classify.model).__module__, "scores": scores_of(classify)}))
"""


@pytest.mark.slow  # a fresh Python process importing transformers
def test_pipeline_through_remote_code_without_the_package(checkpoint):
    """The same pipeline in a fresh interpreter where hf_variants cannot be imported: the checkpoint's
    remote code reads <cls> as the library does (scores equal alone and batched, and equal the
    library's)."""
    scoring = f"SENTENCE = {SENTENCE!r}\nOTHERS = {OTHERS!r}\n{inspect.getsource(scores_of)}"
    script = REMOTE_CODE_SCRIPT.replace("SCORING", scoring)
    result = subprocess.run(
        [sys.executable, "-c", script, str(checkpoint)], capture_output=True, text=True, cwd=checkpoint, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    assert remote["module"].startswith("transformers_modules."), remote["module"]
    assert_identical_alone_and_batched(remote["scores"])
    library = scores_of(pipeline("text-classification", model=str(checkpoint), device="cpu"))
    assert remote["scores"]["alone"] == pytest.approx(library["alone"], abs=ATOL, rel=0)
