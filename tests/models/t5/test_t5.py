"""T5: the shared checks for every head, what is T5's own (relative bias, rescale, dropout
placement, the EOS classification head), named configs, the spec, and bad input."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM

import hf_variants
from hf_variants.models.t5 import (
    SPEC,
    T5Config,
    T5ForConditionalGeneration,
    T5ForQuestionAnswering,
    T5ForSequenceClassification,
    T5Model,
)
from hf_variants.objectives import DataCollatorForSpanCorruption
from hf_variants.tokenization import SEQ2SEQ_TOKENIZER_KINDS
from tests.common.encoder_tester import ALL_CHECKS, EncoderTester, check_save_load

EOS = 1
HEADS = list(SPEC.classes)
T5_TINY = dict(head_dim=8, relative_attention_num_buckets=8, relative_attention_max_distance=20, num_labels=3)


class T5Tester(EncoderTester):
    """The shared tester with T5's inputs: every row ends (before its padding) with EOS, which the
    classification head reads; encoder-decoder heads get decoder inputs or labels."""

    def config(self, **overrides):
        config = super().config(**{**T5_TINY, **overrides})
        return config

    def model(self, head, **overrides):
        if head == "ForQuestionAnswering":
            overrides.setdefault("num_labels", 2)
        return self.classes[head](self.config(**overrides))

    def inputs(self, head, labels=True, seed=0):
        inputs = super().inputs(head, labels, seed)
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        ids = ids.masked_fill(ids == EOS, 5)
        last_real = mask.sum(dim=1) - 1
        ids[torch.arange(ids.shape[0]), last_real] = EOS
        inputs["input_ids"] = ids
        generator = torch.Generator().manual_seed(seed + 1)
        target = torch.randint(2, 99, (ids.shape[0], 6), generator=generator)
        if head == "Model":
            inputs["decoder_input_ids"] = target
        if head == "ForConditionalGeneration":
            if labels:
                inputs["labels"] = target
            else:
                inputs["decoder_input_ids"] = target
        return inputs

    def labels(self, head, ids, mask, g):
        if head in ("Model", "ForConditionalGeneration", "EncoderModel"):
            return {}
        return super().labels(head, ids, mask, g)


TESTER = T5Tester(
    T5Config, SPEC.classes, main_outputs={"ForConditionalGeneration": "logits", "EncoderModel": "last_hidden_state"}
)


# The shared checks are written for encoder outputs over the source (shapes (B, S, ...), encoder
# hidden states). They all apply to the heads that read the source positions; the seq2seq models
# (outputs over the target) get those that do not assume source-shaped outputs. Not applied:
# check_config_built_step_by_step (T5 sets head_dim, so any head count is valid; the invalid
# configs T5 has are in test_bad_input_raises_value_error) and check_returned_states_in_graph on
# Seq2Seq outputs (they name them encoder_/decoder_hidden_states).
CHECKS = {
    "ForTokenClassification": [c for c in ALL_CHECKS if c.__name__ != "check_config_built_step_by_step"],
    **{
        head: [
            c
            for c in ALL_CHECKS
            if c.__name__ not in ("check_config_built_step_by_step", "check_returned_states_in_graph")
        ]
        for head in ("ForSequenceClassification", "ForQuestionAnswering")
    },
    "ForConditionalGeneration": [
        c for c in ALL_CHECKS if c.__name__ in ("check_loss", "check_gradient_flow", "check_backends_agree")
    ],
    "Model": [c for c in ALL_CHECKS if c.__name__ == "check_backends_agree"],
}


@pytest.mark.parametrize(
    "head,check",
    [(h, c) for h, checks in CHECKS.items() for c in checks],
    ids=lambda x: x if isinstance(x, str) else x.__name__,
)
def test_shared_checks(head, check):
    check(TESTER, head)


@pytest.mark.parametrize("head", [h for h in HEADS if h != "EncoderModel"])  # EncoderModel has no Auto class
def test_save_load(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


def test_encoder_model_is_the_encoder_of_the_encoder_decoder():
    torch.manual_seed(0)
    model = T5Model(TESTER.config()).eval()
    encoder_only = hf_variants.models.t5.T5EncoderModel(TESTER.config()).eval()
    encoder_only.encoder.load_state_dict(model.encoder.state_dict())
    inputs = TESTER.inputs("Model", labels=False)
    out = model(**inputs)
    alone = encoder_only(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).last_hidden_state
    real = inputs["attention_mask"].bool()
    assert torch.allclose(out.encoder_last_hidden_state[real], alone[real], atol=1e-6)


def tiny_model(cls=T5ForConditionalGeneration, **overrides):
    torch.manual_seed(0)
    return cls(
        TESTER.config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, ffn_dropout_prob=0.0, **overrides)
    ).eval()


def test_position_bias_shared_by_every_layer_and_causal_in_the_decoder():
    model = tiny_model(T5Model)
    # One bias module per stack (transformers' block 0), none in the layers or in cross-attention.
    names = [name for name, _ in model.named_parameters() if "position_bias" in name]
    assert names == ["encoder.position_bias.embedding.weight", "decoder.position_bias.embedding.weight"]
    assert model.encoder.position_bias.bidirectional and not model.decoder.position_bias.bidirectional
    ids = torch.randint(2, 99, (2, 9))
    target = torch.randint(2, 99, (2, 6))
    reference = model(input_ids=ids, decoder_input_ids=target).last_hidden_state
    with torch.no_grad():
        model.encoder.position_bias.embedding.weight.add_(
            1.0 + torch.rand_like(model.encoder.position_bias.embedding.weight)
        )
    assert (model(input_ids=ids, decoder_input_ids=target).last_hidden_state - reference).abs().max() > 1e-3


def test_tied_output_is_rescaled_and_untied_is_not():
    tied = tiny_model()
    assert tied.lm_head.weight is tied.get_input_embeddings().weight and tied.config.rescales_output
    ids, target = torch.randint(2, 99, (2, 9)), torch.randint(2, 99, (2, 6))
    states = tied.transformer(input_ids=ids, decoder_input_ids=target).last_hidden_state
    logits = tied(input_ids=ids, decoder_input_ids=target).logits
    assert torch.allclose(logits, (states * 32**-0.5) @ tied.lm_head.weight.T, atol=1e-6)
    untied = tiny_model(tie_word_embeddings=False, gated_ffn=True, hidden_act="gelu_new")
    assert untied.lm_head.weight is not untied.get_input_embeddings().weight and not untied.config.rescales_output
    assert untied.transformer.encoder.encoder.layers[0].ffn.gate is not None
    states = untied.transformer(input_ids=ids, decoder_input_ids=target).last_hidden_state
    assert torch.allclose(
        untied(input_ids=ids, decoder_input_ids=target).logits, states @ untied.lm_head.weight.T, atol=1e-6
    )


def test_architecture_has_no_biases_and_rms_norms():
    model = tiny_model()
    assert not [name for name, _ in model.transformer.named_parameters() if name.endswith(".bias")]
    assert type(model.transformer.encoder.encoder.final_layer_norm).__name__ == "T5RMSNorm"  # T5LayerNorm
    assert model.transformer.encoder.embeddings.word_embeddings.padding_idx is None  # pad = decoder start: trained


def test_dropout_after_each_stacks_final_norm():
    """T5 drops out after each stack's final norm, so training-mode outputs differ from eval."""
    model = T5Model(TESTER.config(hidden_dropout_prob=0.5))
    assert model.encoder.encoder.final_dropout is not None and model.decoder.encoder.final_dropout is not None
    ids = torch.randint(2, 99, (2, 9))
    encoder = model.encoder.train()
    zeros = (encoder(input_ids=ids).last_hidden_state == 0).float().mean()
    assert 0.3 < zeros < 0.7  # the last op is a dropout with p=0.5


def test_sequence_classification_reads_the_last_eos():
    model = tiny_model(T5ForSequenceClassification)
    ids = torch.tensor([[5, 6, EOS, 7, 8, EOS, 0], [9, EOS, 10, 11, 12, EOS, 0]])
    out = model(input_ids=ids)
    decoder_states = model.transformer(
        input_ids=ids, decoder_input_ids=torch.cat([torch.zeros(2, 1, dtype=torch.long), ids[:, :-1]], 1)
    ).last_hidden_state
    assert torch.allclose(out.logits, model.classification_head(decoder_states[:, 5], None), atol=1e-6)


def test_bad_input_raises_value_error():
    model = tiny_model(T5ForSequenceClassification)
    with pytest.raises(ValueError, match="same number"):
        model(input_ids=torch.tensor([[5, EOS, 6, EOS], [5, 6, 7, EOS]]))
    with pytest.raises(ValueError, match="eos"):
        model(input_ids=torch.tensor([[5, 6, 7, 8]]))
    with pytest.raises(ValueError, match="num_labels must be 2"):
        T5ForQuestionAnswering(TESTER.config(num_labels=3))
    with pytest.raises(ValueError, match="relative_attention_num_buckets"):
        T5Model(TESTER.config(relative_attention_num_buckets=2))
    with pytest.raises(ValueError, match="pre_layer_norm"):
        T5Model(TESTER.config(pre_layer_norm=False))
    with pytest.raises(ValueError, match="input_ids"):
        tiny_model()(input_ids=torch.tensor([[5, 300]]), decoder_input_ids=torch.tensor([[0]]))
    with pytest.raises(ValueError, match="dropout_rate"):
        hf_variants.to_transformers(T5Model(TESTER.config(ffn_dropout_prob=0.0)))
    from hf_variants.models.t5.weights import feed_forward_proj_to_ours

    with pytest.raises(ValueError, match="feed_forward_proj"):
        feed_forward_proj_to_ours("gelu-gated")


# The paper's sizes (Raffel et al. 2020, sec. 3.7) and the released v1.1 checkpoints' sizes.
# t5-large: the paper says "770M" but the released google-t5/t5-large (tied output, the same
# architecture) has 737.7M, 4.2% less; 770M is that plus a separate 32.9M output layer. We check
# against the released checkpoint and state the paper's figure here.
SIZES = [
    ("t5-small", 60e6),
    ("t5-base", 220e6),
    ("t5-large", 737.7e6),
    ("t5-v1_1-small", 77e6),
    ("t5-v1_1-base", 248e6),
    ("t5-v1_1-large", 783e6),
]


@pytest.mark.parametrize("name,params", SIZES)
def test_named_config_parameter_counts_within_3_percent(name, params):
    config = hf_variants.named_config(name)
    with torch.device("meta"):
        model = AutoModelForSeq2SeqLM.from_config(config)
    assert isinstance(model, T5ForConditionalGeneration)
    assert abs(sum(p.numel() for p in model.parameters()) - params) / params < 0.03
    assert config.rescales_output == (not name.startswith("t5-v1_1"))


def test_t5_mini_loads_by_name():
    config = AutoConfig.from_pretrained(str(hf_variants.models.named_configs.named_config_path("t5-mini")))
    assert (config.model_type, config.hidden_size, config.num_hidden_layers) == ("hfv_t5", 256, 4)


def test_spec_names_span_corruption_and_the_t5_tokenizer():
    assert SPEC.pretraining_objective == "span-corruption" and SPEC.tokenizer_kind == "unigram-t5"
    assert SPEC.tokenizer_kind in SEQ2SEQ_TOKENIZER_KINDS and DataCollatorForSpanCorruption is not None


def test_remote_code_loads_without_the_package(tmp_path):
    """save_pretrained writes self-contained code: AutoModelForSeq2SeqLM with trust_remote_code, in a
    fresh process that cannot import hf_variants, gives the same logits and generates."""
    import subprocess
    import sys

    torch.manual_seed(0)
    model = tiny_model()
    model.save_pretrained(tmp_path)
    ids, target = torch.randint(2, 99, (2, 7)), torch.randint(0, 99, (2, 4))
    with torch.no_grad():
        expected = model(input_ids=ids, decoder_input_ids=target).logits
    torch.save({"ids": ids, "target": target, "expected": expected}, tmp_path / "reference.pt")
    script = f"""
import importlib.abc, sys, torch
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "hf_variants":
            raise ImportError("hf_variants must not be needed")
sys.meta_path.insert(0, Block())
from transformers import AutoModelForSeq2SeqLM
model = AutoModelForSeq2SeqLM.from_pretrained({str(tmp_path)!r}, trust_remote_code=True).eval()
ref = torch.load({str(tmp_path / "reference.pt")!r}, weights_only=True)
with torch.no_grad():
    diff = (model(input_ids=ref["ids"], decoder_input_ids=ref["target"]).logits - ref["expected"]).abs().max().item()
assert diff <= 1e-6, diff
assert model.generate(ref["ids"], max_new_tokens=3).shape == (2, 4)
print("ok", type(model).__module__)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("ok transformers_modules.")
