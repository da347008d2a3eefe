"""GPT (GPT-1 and GPT-2 through one config): every head through the shared encoder checks + save/load
for both generations, the cache against recomputing the prefix, GPT-2's scaled residual init, the
last-real-token summary, named configs' sizes and bad input."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

import hf_variants
from hf_variants.models.gpt import GPTConfig, GPTForSequenceClassification, GPTLMHeadModel, GPTModel
from hf_variants.models.gpt.modeling_gpt import last_token_positions
from tests.common.encoder_tester import ALL_CHECKS, TINY, EncoderTester, check_save_load

# Token ids of the tiny configs: 0 pads (the shared tester's padding id), 1 starts, 2 ends.
IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
GPT1 = dict(pre_layer_norm=False, scale_residual_init=False, intermediate_size=128)
GENERATIONS = {"gpt2": dict(IDS), "gpt1": dict(IDS, **GPT1)}

ENCODER_HEADS = ["Model", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering"]
CLASSES = {head: getattr(hf_variants, f"GPT{head}") for head in ENCODER_HEADS}
TESTERS = {
    name: EncoderTester(GPTConfig, CLASSES, config_overrides=overrides) for name, overrides in GENERATIONS.items()
}
# The causal LM runs the shared checks under the MLM head's name: logits (B, T, V), a token-level
# loss (here next-token prediction of the labelled positions), a tied output layer.
LM_TESTERS = {
    name: EncoderTester(GPTConfig, {"ForMaskedLM": GPTLMHeadModel}, config_overrides=overrides)
    for name, overrides in GENERATIONS.items()
}


def tiny(generation: str = "gpt2", **overrides) -> GPTConfig:
    return GPTConfig(
        **{
            **TINY,
            **GENERATIONS[generation],
            "hidden_dropout_prob": 0.0,
            "attention_probs_dropout_prob": 0.0,
            **overrides,
        }
    )


# The heads are the same modules over either block: GPT-1 runs the checks on the bare model (and the LM).
@pytest.mark.parametrize("generation,head", [("gpt2", head) for head in ENCODER_HEADS] + [("gpt1", "Model")])
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head, generation):
    check(TESTERS[generation], head)


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks_causal_lm(check, generation):
    check(LM_TESTERS[generation], "ForMaskedLM")


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("head", ENCODER_HEADS)
def test_save_load_round_trip(head, generation, tmp_path):
    check_save_load(TESTERS[generation], head, tmp_path)


def test_causal_lm_save_load_through_auto_model_for_causal_lm(tmp_path):
    torch.manual_seed(0)
    model = GPTLMHeadModel(tiny()).eval()
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert type(reloaded) is GPTLMHeadModel and reloaded.lm_head.weight is reloaded.get_input_embeddings().weight
    ids = torch.randint(3, 99, (2, 6))
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids).logits, model(ids).logits, atol=1e-6, rtol=0)


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("backend", ["eager", "sdpa"])
def test_one_cached_step_equals_recomputing_the_prefix(generation, backend):
    torch.manual_seed(0)
    config = tiny(generation)
    config._attn_implementation = backend
    model = GPTLMHeadModel(config).eval()
    ids = torch.randint(3, 99, (2, 7))
    mask = torch.ones_like(ids)
    ids[1, :3], mask[1, :3] = 0, 0  # left padding
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    next_tokens = torch.tensor([[11], [12]])
    full_mask = torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], dim=1)
    full_positions = (full_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        first = model(ids, attention_mask=mask, position_ids=positions, use_cache=True)
        step = model(
            next_tokens,
            attention_mask=full_mask,
            position_ids=full_positions[:, -1:],
            past_key_values=first.past_key_values,
        )
        full = model(
            torch.cat([ids, next_tokens], 1), attention_mask=full_mask, position_ids=full_positions, use_cache=False
        )
    torch.testing.assert_close(step.logits[:, 0], full.logits[:, -1], atol=1e-5, rtol=0)
    # Without position_ids, positions continue after the cache (0..T-1 whatever the padding, as transformers).
    with torch.no_grad():
        first = model(ids[:, :4], use_cache=True)
        step = model(ids[:, 4:], past_key_values=first.past_key_values)
        full = model(ids, use_cache=False)
    torch.testing.assert_close(step.logits, full.logits[:, 4:], atol=1e-5, rtol=0)


def test_gpt2_scales_the_residual_projections_init_and_gpt1_does_not():
    torch.manual_seed(0)
    overrides = dict(hidden_size=256, num_attention_heads=4, intermediate_size=1024, num_hidden_layers=8)
    for generation, expected in (("gpt2", 0.02 / math.sqrt(16)), ("gpt1", 0.02)):
        config = tiny(generation, initializer_range=0.02, **overrides)
        if generation == "gpt1":
            config.intermediate_size = 1024
        layer = GPTModel(config).encoder.layers[0]
        for weight in (layer.attention.out.weight, layer.ffn.down.weight):
            assert abs(weight.std().item() - expected) / expected < 0.05
        assert abs(layer.attention.qkv.weight.std().item() - 0.02) / 0.02 < 0.05


def test_gpt1_is_post_ln_without_final_norm_and_gpt2_pre_ln_with_one():
    assert GPTModel(tiny("gpt1")).encoder.final_layer_norm is None
    assert GPTModel(tiny("gpt2")).encoder.final_layer_norm is not None
    for generation in GENERATIONS:
        embeddings = GPTModel(tiny(generation)).embeddings
        # No LayerNorm on the embeddings and no segment table: word + position tables only.
        assert {name for name, _ in embeddings.named_children()} == {
            "word_embeddings",
            "position_embeddings",
            "dropout",
        }
        assert embeddings.word_embeddings.padding_idx is None  # the padding id (often <|endoftext|>) keeps its row


def test_sequence_classification_reads_the_last_token_that_is_not_padding():
    ids = torch.tensor([[5, 6, 7, 0, 0], [0, 0, 5, 6, 7], [5, 6, 7, 8, 9]])
    assert last_token_positions(ids, None, 0)[:, 0].tolist() == [2, 4, 4]
    assert last_token_positions(None, torch.zeros(3, 5, 8), 0)[:, 0].tolist() == [4, 4, 4]
    torch.manual_seed(0)
    model = GPTForSequenceClassification(tiny(num_labels=3)).eval()
    with torch.no_grad():
        batched = model(ids[:1], attention_mask=(ids[:1] != 0).long()).logits
        alone = model(ids[:1, :3]).logits
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=0)


def test_token_type_ids_are_embedded_by_the_word_table():
    torch.manual_seed(0)
    model = GPTModel(tiny()).eval()
    ids, types = torch.randint(3, 99, (2, 5)), torch.randint(3, 99, (2, 5))
    with torch.no_grad():
        by_types = model(ids, token_type_ids=types).last_hidden_state
        by_embeds = model(
            inputs_embeds=model.embeddings.word_embeddings(ids) + model.embeddings.word_embeddings(types)
        ).last_hidden_state
    torch.testing.assert_close(by_types, by_embeds, atol=1e-6, rtol=0)


def test_bad_inputs_and_configs_raise_value_errors():
    with pytest.raises(ValueError, match="pad_token_id"):
        GPTForSequenceClassification(tiny(pad_token_id=None))(torch.randint(3, 99, (2, 5)))
    with pytest.raises(ValueError, match="token_type_ids"):
        GPTModel(tiny())(torch.randint(3, 99, (1, 5)), token_type_ids=torch.full((1, 5), 500))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        GPTModel(tiny())(torch.randint(3, 99, (1, 65)))
    for field, value in (("summary_type", "first"), ("type_vocab_size", 2), ("position_embedding_type", "sinusoidal")):
        with pytest.raises(ValueError, match=field if field != "position_embedding_type" else "learned"):
            GPTModel(tiny(**{field: value}))
    # A bos id outside the vocabulary builds (as transformers' GPT2Config defaults with a small vocab)
    # and is refused where generate() would look it up.
    with pytest.raises(ValueError, match="bos_token_id 500 is outside the vocabulary"):
        GPTLMHeadModel(tiny(bos_token_id=500)).generate(max_new_tokens=1)


def count_parameters(name: str) -> int:
    with torch.device("meta"):
        model = AutoModel.from_config(hf_variants.named_config(name))
    return sum(p.numel() for p in model.parameters())


# The released checkpoints' sizes (the GPT-2 paper's Table 2 lists 117M / 345M / 762M / 1542M,
# undercounting the smaller ones); GPT-1: 117M (Radford et al. 2018).
@pytest.mark.parametrize(
    "name,params",
    [("gpt2", 124e6), ("gpt2-medium", 355e6), ("gpt2-large", 774e6), ("gpt2-xl", 1558e6), ("openai-gpt", 117e6)],
)
def test_parameter_counts_within_3_percent(name, params):
    assert abs(count_parameters(name) - params) / params < 0.03


@pytest.mark.parametrize(
    "name,layers,hidden,positions,pre_ln",
    [
        ("gpt2-mini", 4, 256, 1024, True),
        ("gpt2", 12, 768, 1024, True),
        ("gpt2-medium", 24, 1024, 1024, True),
        ("gpt2-large", 36, 1280, 1024, True),
        ("gpt2-xl", 48, 1600, 1024, True),
        ("openai-gpt", 12, 768, 512, False),
    ],
)
def test_named_configs(name, layers, hidden, positions, pre_ln):
    config = AutoConfig.from_pretrained(str(hf_variants.models.named_configs.MODELING_CONFIGS_DIR / name))
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("hfv_gpt", layers, hidden)
    assert (config.max_position_embeddings, config.pre_layer_norm, config.intermediate_size) == (
        positions,
        pre_ln,
        4 * hidden,
    )
    assert config.hidden_size // config.num_attention_heads == 64


def test_spec_declares_clm_and_byte_level_bpe():
    spec = hf_variants.registry.SPECS["hfv_gpt"]
    assert spec.pretraining_objective == "clm" and spec.tokenizer_kind == "bpe"
    assert AutoModelForCausalLM.from_config(tiny()).__class__ is GPTLMHeadModel


@pytest.mark.parametrize("head", [GPTLMHeadModel, hf_variants.GPTDoubleHeadsModel])
def test_generate_refuses_right_padded_prompts_and_takes_left_padded_ones(head):
    """A right-padded row would continue after its padding (positions it never has alone): refused
    by name. The same prompts padded on the left generate."""
    torch.manual_seed(0)
    model = head(tiny()).eval()
    ids = torch.randint(3, 99, (2, 5))
    right = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    with pytest.raises(ValueError, match="padded on the left"):
        model.generate(ids, attention_mask=right, max_new_tokens=2, do_sample=False)
    left = right.flip(1)
    assert model.generate(ids, attention_mask=left, max_new_tokens=2, do_sample=False).shape == (2, 7)
