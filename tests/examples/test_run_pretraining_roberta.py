"""examples/run_pretraining.py with roberta-mini from its spec: a byte-level BPE tokenizer with
RoBERTa's special tokens, MLM alone with dynamic masking over DOC-SENTENCES rows of real Austen
chapters, the held-out loss falls, and the output loads as a RoBERTa classifier."""

from __future__ import annotations

from test_run_pretraining import load_script
from tokenizers import decoders
from transformers import AutoModelForSequenceClassification, AutoTokenizer

import hf_variants


def test_roberta_pretrains_with_byte_level_bpe_on_doc_sentences(tmp_path):
    script = load_script()
    results = script.main(
        [
            "--model_name_or_path",
            "roberta-mini",
            "--corpus",
            "austen",
            "--max_documents",
            "12",
            "--input_format",
            "doc-sentences",
            "--vocab_size",
            "600",
            "--max_seq_length",
            "64",
            "--per_device_train_batch_size",
            "8",
            "--learning_rate",
            "2e-3",
            "--warmup_steps",
            "0.1",
            "--max_steps",
            "12",
            "--save_strategy",
            "no",
            "--seed",
            "3",
            "--disable_tqdm",
            "true",
            "--output_dir",
            str(tmp_path),
        ]
    )
    assert (results["objective"], results["masking"], results["input_format"]) == ("mlm", "dynamic", "doc-sentences")
    assert results["after_training"]["mlm_loss"] < results["before_training"]["mlm_loss"] - 0.3

    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert isinstance(tokenizer.backend_tokenizer.decoder, decoders.ByteLevel)  # the spec's "bpe" kind
    assert [tokenizer.convert_tokens_to_ids(t) for t in ("<s>", "<pad>", "</s>")] == [0, 1, 2]
    pair = tokenizer("Emma smiled.", "Harriet wept.")["input_ids"]
    assert pair[0] == 0 and pair.count(2) == 3 and pair[pair.index(2) + 1] == 2  # <s> A </s></s> B </s>
    assert "…" in tokenizer.decode(tokenizer("a curtsey… é")["input_ids"])  # bytes: no unknown characters

    classifier = AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=2)
    assert isinstance(classifier, hf_variants.RobertaForSequenceClassification)
    assert classifier.config.pad_token_id == tokenizer.pad_token_id == 1
