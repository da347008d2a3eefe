"""The original Transformer: parity with transformers' MarianModel / MarianMTModel configured as the
paper's model (both directions, eager and sdpa, padded sources), from_pretrained of a Marian folder,
generate() giving Marian's tokens (greedy and 3 beams), the cache against recomputing, label
smoothing and the Noam schedule against their formulas (through the real Trainer), the sinusoidal
layouts, named configs' sizes and bad input."""

from __future__ import annotations

import math

import pytest
import torch
import transformers
from torch.nn import functional as F
from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM, Trainer

import hf_variants
from hf_variants import from_transformers, to_transformers
from hf_variants.models.transformer import (
    OriginalTransformerConfig,
    TransformerForConditionalGeneration,
    TransformerModel,
    noam_learning_rate,
    noam_training_arguments,
)
from hf_variants.modules.embeddings import sinusoidal_table
from tests.common.parity import assert_same_seq2seq_attentions

PAD, START, EOS = 0, 1, 2
TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    decoder_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    pad_token_id=PAD,
    eos_token_id=None,
    decoder_start_token_id=START,
    initializer_range=0.3,
)


def tiny(**overrides) -> OriginalTransformerConfig:
    return OriginalTransformerConfig(**{**TINY, "sinusoidal_layout": "concatenated", **overrides})


def marian(head: str = "MTModel", backend: str = "sdpa", seed: int = 0):
    torch.manual_seed(seed)
    config = transformers.MarianConfig(
        vocab_size=99,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=37,
        decoder_ffn_dim=37,
        max_position_embeddings=64,
        activation_function="relu",
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.3,
        scale_embedding=True,
        pad_token_id=PAD,
        eos_token_id=None,
        decoder_start_token_id=START,
        forced_eos_token_id=None,
    )
    config._attn_implementation = backend
    return getattr(transformers, "Marian" + head)(config).eval()


def source_batch(side: str = "right", seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 99, (3, 7), generator=generator)
    mask = torch.ones_like(ids)
    for row, length in ((1, 4), (2, 6)):
        where = slice(length, None) if side == "right" else slice(0, 7 - length)
        ids[row, where], mask[row, where] = PAD, 0
    return ids, mask


TARGETS = torch.randint(3, 99, (3, 6), generator=torch.Generator().manual_seed(2))


def outputs(model, side: str):
    ids, mask = source_batch(side)
    with torch.no_grad():
        out = model(ids, attention_mask=mask, decoder_input_ids=TARGETS)
    return out.logits if hasattr(out, "logits") else out.last_hidden_state


# Both paths of the speed plug-in (config.padding_free, hf_variants/modules/fast_path.py): the plain
# PyTorch path, and the packed encoder that runs on CPU by default.
PATHS = {"plain": False, "fast": True}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("head", ["Model", "MTModel"])
def test_from_and_to_transformers_give_the_same_outputs(head, backend, side, path):
    theirs = marian(head, backend)
    ours = from_transformers(theirs).eval()
    ours.config.padding_free = PATHS[path]
    assert type(ours) is (TransformerModel if head == "Model" else TransformerForConditionalGeneration)
    torch.testing.assert_close(outputs(ours, side), outputs(theirs, side), atol=1e-5, rtol=0)
    torch.manual_seed(3)
    mine = type(ours)(ours.config).eval()  # our init, converted the other way (built with the same switch)
    back = to_transformers(mine).eval()
    assert type(back) is type(theirs)
    torch.testing.assert_close(outputs(back, side), outputs(mine, side), atol=1e-5, rtol=0)


@pytest.mark.parametrize("head", ["Model", "MTModel"])
def test_from_pretrained_of_a_marian_folder(head, tmp_path):
    theirs = marian(head)
    theirs.save_pretrained(tmp_path)
    ours_class = TransformerModel if head == "Model" else TransformerForConditionalGeneration
    ours = ours_class.from_pretrained(tmp_path).eval()
    assert ours.config.model_type == "hfv_transformer" and ours.config.sinusoidal_layout == "concatenated"
    torch.testing.assert_close(outputs(ours, "right"), outputs(theirs, "right"), atol=1e-5, rtol=0)


@pytest.mark.parametrize("path", list(PATHS))
def test_a_converted_marian_model_keeps_its_loss(tmp_path, path):
    """MarianMTModel's loss has no label smoothing: converted (in memory or from its folder), ours
    gives the same loss, not the paper's smoothed one (on both paths of the speed plug-in)."""
    theirs = marian("MTModel")
    theirs.save_pretrained(tmp_path)
    ids, mask = source_batch("right")
    with torch.no_grad():
        expected = theirs(ids, attention_mask=mask, labels=TARGETS).loss
        for ours in (
            from_transformers(theirs).eval(),
            TransformerForConditionalGeneration.from_pretrained(tmp_path).eval(),
        ):
            assert ours.config.label_smoothing == 0.0
            ours.config.padding_free = PATHS[path]
            torch.testing.assert_close(ours(ids, attention_mask=mask, labels=TARGETS).loss, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
def test_generation_gives_marians_tokens(backend):
    theirs = marian("MTModel", backend)
    ours = from_transformers(theirs).eval()
    for side in ("right", "left"):
        ids, mask = source_batch(side)
        for options in (dict(do_sample=False), dict(num_beams=3, do_sample=False)):
            expected = theirs.generate(ids, attention_mask=mask, max_new_tokens=10, **options)
            assert torch.equal(ours.generate(ids, attention_mask=mask, max_new_tokens=10, **options), expected)
            assert len(set(expected[:, 1:].flatten().tolist())) >= 3  # rows continue differently


def test_cached_step_equals_recomputing_the_prefix():
    torch.manual_seed(0)
    model = TransformerForConditionalGeneration(tiny()).eval()
    ids, mask = source_batch()
    with torch.no_grad():
        first = model(ids, attention_mask=mask, decoder_input_ids=TARGETS[:, :4], use_cache=True)
        step = model(
            encoder_outputs=(first.encoder_last_hidden_state,),
            attention_mask=mask,
            decoder_input_ids=TARGETS[:, 4:5],
            past_key_values=first.past_key_values,
        )
        full = model(ids, attention_mask=mask, decoder_input_ids=TARGETS[:, :5], use_cache=False)
    torch.testing.assert_close(step.logits[:, 0], full.logits[:, -1], atol=1e-5, rtol=0)


def test_label_smoothing_is_the_papers_formula():
    torch.manual_seed(0)
    model = TransformerForConditionalGeneration(tiny()).eval()
    assert model.label_smoothing == 0.1
    ids, mask = source_batch()
    labels = TARGETS.clone()
    labels[1, 4:] = -100
    with torch.no_grad():
        out = model(ids, attention_mask=mask, labels=labels)
    # (1 - eps) * NLL(target) + eps * mean over the vocabulary of -log p, averaged over labelled tokens.
    log_probs = F.log_softmax(out.logits, dim=-1)
    keep = labels != -100
    nll = -log_probs.gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    expected = ((0.9 * nll + 0.1 * -log_probs.mean(-1))[keep]).mean()
    torch.testing.assert_close(out.loss, expected, atol=1e-6, rtol=0)
    no_smoothing = TransformerForConditionalGeneration(tiny(label_smoothing=0.0)).eval()
    no_smoothing.load_state_dict(model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(
            no_smoothing(ids, attention_mask=mask, labels=labels).loss, nll[keep].mean(), atol=1e-6, rtol=0
        )


def test_noam_schedule_through_trainer_follows_the_formula(tmp_path):
    torch.manual_seed(0)
    model = TransformerForConditionalGeneration(tiny())
    args = noam_training_arguments(str(tmp_path), d_model=512, warmup_steps=4000, report_to=[], max_steps=10)
    trainer = Trainer(model=model, args=args)
    trainer.create_optimizer_and_scheduler(num_training_steps=20000)
    group = trainer.optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
    scheduler = trainer.lr_scheduler  # transformers' LambdaLR: lr(k) = base lr * lambda(k)
    seen = {
        step: group["initial_lr"] * scheduler.lr_lambdas[0](step) for step in (1, 100, 3999, 4000, 4001, 8000, 12000)
    }
    for step, lr in seen.items():
        assert lr == pytest.approx(noam_learning_rate(step, 512, 4000), rel=1e-9), step
    for _ in range(3):  # and the scheduler the optimizer really follows steps through the same values
        trainer.optimizer.step()
        scheduler.step()
    assert group["lr"] == pytest.approx(noam_learning_rate(3, 512, 4000), rel=1e-9)
    assert seen[4000] == pytest.approx(512**-0.5 * 4000**-0.5)
    with pytest.raises(ValueError, match="learning_rate"):
        noam_training_arguments(str(tmp_path), d_model=512, learning_rate=1e-3)


def test_sinusoidal_layouts():
    interleaved, concatenated = sinusoidal_table(50, 16), sinusoidal_table(50, 16, "concatenated")
    pos, i = 7, 3
    angle = pos / 10000 ** (2 * i / 16)
    assert interleaved[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-7)
    assert interleaved[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-7)
    assert concatenated[pos, i].item() == pytest.approx(math.sin(angle), abs=1e-7)
    assert concatenated[pos, 8 + i].item() == pytest.approx(math.cos(angle), abs=1e-7)
    model = TransformerModel(tiny(sinusoidal_layout="interleaved"))
    assert torch.equal(model.encoder.embeddings.sinusoidal_positions, sinusoidal_table(64, 32))
    assert model.decoder.get_input_embeddings() is model.encoder.get_input_embeddings()
    with pytest.raises(ValueError, match="concatenated"):
        to_transformers(TransformerModel(tiny(sinusoidal_layout="interleaved")))


def test_embeddings_are_scaled_by_sqrt_d_model():
    model = TransformerModel(tiny()).eval()
    ids = torch.randint(3, 99, (1, 5))
    embeddings = model.encoder.embeddings
    positions = torch.arange(5)[None]
    # the table's rows, scaled (the lookup of get_input_embeddings() applies the scale itself)
    expected = embeddings.word_embeddings.weight[ids] * math.sqrt(32) + embeddings.sinusoidal_positions[:5]
    torch.testing.assert_close(embeddings(ids, positions), expected)


def test_save_load_through_auto_model_for_seq2seq_lm(tmp_path):
    torch.manual_seed(0)
    model = TransformerForConditionalGeneration(tiny()).eval()
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(reloaded) is TransformerForConditionalGeneration
    torch.testing.assert_close(outputs(reloaded, "right"), outputs(model, "right"), atol=1e-6, rtol=0)


def test_bad_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="sinusoidal_layout"):
        TransformerModel(tiny(sinusoidal_layout="zigzag"))
    with pytest.raises(ValueError, match="label_smoothing"):
        TransformerModel(tiny(label_smoothing=1.5))
    theirs = marian()
    theirs.final_logits_bias.fill_(0.5)
    with pytest.raises(ValueError, match="final_logits_bias"):
        from_transformers(theirs)
    with pytest.raises(ValueError, match="decoder_input_ids"):
        TransformerModel(tiny())(torch.randint(3, 99, (1, 5)))


def count_parameters(name: str) -> int:
    with torch.device("meta"):
        model = AutoModel.from_config(hf_variants.named_config(name))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name,params", [("transformer-base", 65e6), ("transformer-big", 213e6)])
def test_parameter_counts_within_3_percent_of_table_3(name, params):
    assert abs(count_parameters(name) - params) / params < 0.03


def test_named_configs():
    base = AutoConfig.from_pretrained(str(hf_variants.models.named_configs.MODELING_CONFIGS_DIR / "transformer-base"))
    big = AutoConfig.from_pretrained(str(hf_variants.models.named_configs.MODELING_CONFIGS_DIR / "transformer-big"))
    assert (
        base.model_type,
        base.num_hidden_layers,
        base.decoder_layers,
        base.hidden_size,
        base.intermediate_size,
        base.num_attention_heads,
        base.hidden_dropout_prob,
        base.vocab_size,
    ) == ("hfv_transformer", 6, 6, 512, 2048, 8, 0.1, 37000)
    assert (big.hidden_size, big.intermediate_size, big.num_attention_heads, big.hidden_dropout_prob) == (
        1024,
        4096,
        16,
        0.3,
    )
    assert hf_variants.named_config("transformer-mini").hidden_size == 256


@pytest.mark.parametrize("side", ["right", "left"])
def test_attention_probabilities_equal_marians(side):
    """output_attentions=True: encoder, decoder and cross-attention probabilities as Marian's."""
    theirs = marian("MTModel", backend="eager")
    ours = from_transformers(theirs).eval()
    ids, mask = source_batch(side)
    with torch.no_grad():
        expected = theirs(ids, attention_mask=mask, decoder_input_ids=TARGETS, output_attentions=True)
        got = ours(ids, attention_mask=mask, decoder_input_ids=TARGETS, output_attentions=True)
    assert_same_seq2seq_attentions(expected, got, mask)


def test_padding_free_switch_packs_the_encoder_alone():
    """With ``config.padding_free`` (set on the model after it is built) the encoder's layers run on
    the real tokens alone, (N, H), and the decoder's padded; with it off every layer sees (B, T, H).
    Both give Marian's outputs (the parity tests above)."""
    ours = from_transformers(marian("MTModel")).eval()
    ids, mask = source_batch("right")
    stacks = (ours.model.encoder, ours.model.decoder)
    for padding_free in (True, False):
        ours.config.padding_free = padding_free
        shapes = []
        hooks = [
            stack.encoder.layers[0].attention.register_forward_hook(lambda m, args, out: shapes.append(args[0].shape))
            for stack in stacks
        ]
        with torch.no_grad():
            ours(ids, attention_mask=mask, decoder_input_ids=TARGETS)
        for hook in hooks:
            hook.remove()
        assert shapes == [(int(mask.sum()), 32) if padding_free else (3, 7, 32), (3, 6, 32)]
