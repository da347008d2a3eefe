"""generate() through transformers' own machinery on a tiny decoder-only model and a tiny
encoder-decoder model built from the shared blocks (tests/common/tiny_decoders.py): cache = no cache,
cached logits = recomputed prefix, greedy = a manual argmax loop, beam search, sampling,
max_new_tokens, EOS stopping, left-padded batches, save/load through safetensors."""

from __future__ import annotations

import os

import pytest
import torch
from torch.nn import functional as F
from transformers import DynamicCache

from hf_variants.modules.embeddings import TransformerEmbeddings
from hf_variants.modules.generation import DecoderForCausalLM
from tests.common.tiny_decoders import (
    TINY,
    TinyDecoderModel,
    TinyForCausalLM,
    TinyForConditionalGeneration,
    TinyPreTrainedModel,
    tiny_decoder_config,
    tiny_seq2seq_config,
)

BACKENDS = ("eager", "sdpa")
PAD = 0


def causal_lm(backend: str = "sdpa", seed: int = 0, **overrides) -> TinyForCausalLM:
    torch.manual_seed(seed)
    config = tiny_decoder_config(**overrides)
    config._attn_implementation = backend
    return TinyForCausalLM(config).eval()


def seq2seq_lm(backend: str = "sdpa", seed: int = 0, **overrides) -> TinyForConditionalGeneration:
    torch.manual_seed(seed)
    config = tiny_seq2seq_config(**overrides)
    config._attn_implementation = backend
    return TinyForConditionalGeneration(config).eval()


def prompts(batch: int = 3, length: int = 6, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(3, 99, (batch, length), generator=generator)


def left_pad(rows: list[torch.Tensor], side: str = "left") -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of different lengths -> (B, T) ids padded with PAD on ``side`` and the (B, T) attention mask."""
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), PAD, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, row in enumerate(rows):
        where = slice(width - len(row), width) if side == "left" else slice(0, len(row))
        ids[i, where] = row
        mask[i, where] = 1
    return ids, mask


def greedy(model, ids, **kwargs) -> torch.Tensor:
    return model.generate(ids, do_sample=False, max_new_tokens=8, **kwargs)


# ----------------------------------------------------------------------------- decoder-only
@pytest.mark.parametrize("backend", BACKENDS)
def test_cached_generation_equals_uncached(backend):
    model = causal_lm(backend)
    ids = prompts()
    cached = greedy(model, ids, use_cache=True)
    assert torch.equal(cached, greedy(model, ids, use_cache=False))
    assert cached.shape == (3, 6 + 8)
    assert len(set(cached[0, 6:].tolist())) > 1  # a real continuation, not one repeated token


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_cached_step_equals_recomputing_the_prefix(backend):
    model = causal_lm(backend)
    rows = [prompts(1, 7, seed=2)[0], prompts(1, 4, seed=3)[0]]
    ids, mask = left_pad(rows)
    next_tokens = torch.tensor([[11], [12]])
    with torch.no_grad():
        first = model(ids, attention_mask=mask, use_cache=True)
        assert isinstance(first.past_key_values, DynamicCache)
        assert first.past_key_values.get_seq_length() == ids.shape[1]
        step_mask = torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], dim=1)
        step = model(next_tokens, attention_mask=step_mask, past_key_values=first.past_key_values)
        full = model(torch.cat([ids, next_tokens], dim=1), attention_mask=step_mask, use_cache=False)
    assert step.logits.shape == (2, 1, 99)
    torch.testing.assert_close(step.logits[:, 0], full.logits[:, -1], atol=1e-5, rtol=0)
    assert full.past_key_values is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_greedy_equals_manual_argmax_loop(backend):
    model = causal_lm(backend)
    ids = prompts()
    sequence = ids
    with torch.no_grad():
        for _ in range(8):
            logits = model(sequence, use_cache=False).logits[:, -1]
            sequence = torch.cat([sequence, logits.argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(greedy(model, ids), sequence)


def test_beam_search_is_deterministic_and_cache_independent():
    model = causal_lm()
    ids = prompts()
    beams = model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=8)
    assert beams.shape == (3, 14)
    assert torch.equal(beams, model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=8))
    # Beams reorder the cache (Cache.reorder_cache): recomputing every step must agree.
    assert torch.equal(beams, model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=8, use_cache=False))
    returned = model.generate(
        ids,
        num_beams=3,
        num_return_sequences=3,
        do_sample=False,
        max_new_tokens=8,
        output_scores=True,
        return_dict_in_generate=True,
    )
    assert returned.sequences.shape == (9, 14)
    assert torch.equal(returned.sequences[::3], beams)  # the best beam of each prompt comes first
    assert bool((returned.sequences_scores[0::3] >= returned.sequences_scores[1::3]).all())


def test_sampling_is_seeded_and_cache_independent():
    model = causal_lm()
    ids = prompts()

    def sample(use_cache):
        torch.manual_seed(123)
        return model.generate(ids, do_sample=True, top_k=20, temperature=0.8, max_new_tokens=8, use_cache=use_cache)

    first = sample(True)
    assert torch.equal(first, sample(True))
    assert torch.equal(first, sample(False))
    assert not torch.equal(first, greedy(model, ids))  # sampling really sampled


@pytest.mark.parametrize("backend", BACKENDS)
def test_left_padded_batch_gives_each_row_its_own_tokens(backend):
    model = causal_lm(backend)
    rows = [prompts(1, 7, seed=4)[0], prompts(1, 3, seed=5)[0], prompts(1, 5, seed=6)[0]]
    ids, mask = left_pad(rows)
    batched = greedy(model, ids, attention_mask=mask)
    for i, row in enumerate(rows):
        alone = greedy(model, row[None])
        assert torch.equal(batched[i, ids.shape[1] :], alone[0, len(row) :]), f"row {i}"


def test_eos_stops_generation_and_pads_finished_rows():
    model = causal_lm()
    ids = prompts(2, 6)
    free = greedy(model, ids)
    eos = int(free[0, 6 + 2])  # row 0 emits this token at its third step
    stopped = greedy(model, ids, eos_token_id=eos, pad_token_id=PAD)
    first_eos = (free[0, 6:] == eos).nonzero()[0, 0].item()
    assert stopped[0, 6 + first_eos] == eos
    assert bool((stopped[0, 6 + first_eos + 1 :] == PAD).all())
    assert torch.equal(stopped[0, : 6 + first_eos + 1], free[0, : 6 + first_eos + 1])
    row_1_hits = (free[1, 6:] == eos).nonzero()
    if len(row_1_hits) == 0:  # row 1 never emits it: it runs to max_new_tokens, the length of the output
        assert stopped.shape[1] == free.shape[1] and torch.equal(stopped[1], free[1])


def test_max_new_tokens_and_max_length():
    model = causal_lm()
    ids = prompts(2, 5)
    assert model.generate(ids, max_new_tokens=3, do_sample=False).shape == (2, 8)
    assert model.generate(ids, max_length=7, do_sample=False).shape == (2, 7)


def test_causal_lm_loss_is_shifted_cross_entropy_with_ignored_labels():
    model = causal_lm()
    ids = prompts(2, 6)
    labels = ids.clone()
    labels[0, 3] = -100
    out = model(ids, labels=labels)
    expected = F.cross_entropy(out.logits[:, :-1].reshape(-1, 99), labels[:, 1:].reshape(-1), ignore_index=-100)
    torch.testing.assert_close(out.loss, expected)
    assert out.past_key_values is None  # training calls keep no cache unless asked
    with pytest.raises(ValueError, match="labels contains class 120"):
        model(ids, labels=torch.full_like(ids, 120))


def test_lm_head_is_tied_and_saved_once(tmp_path):
    model = causal_lm()
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    ids = prompts()
    before = greedy(model, ids)
    model.save_pretrained(tmp_path)
    assert os.path.exists(tmp_path / "model.safetensors")
    assert not os.path.exists(tmp_path / "pytorch_model.bin")
    from safetensors import safe_open

    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        names = set(f.keys())
    assert "lm_head.weight" not in names and "model.embeddings.word_embeddings.weight" in names
    loaded = TinyForCausalLM.from_pretrained(tmp_path).eval()
    assert loaded.get_output_embeddings().weight is loaded.get_input_embeddings().weight
    assert torch.equal(greedy(loaded, ids), before)


def test_logits_to_keep():
    model = causal_lm()
    ids = prompts()
    with torch.no_grad():
        full = model(ids, use_cache=False).logits
        last = model(ids, use_cache=False, logits_to_keep=1).logits
    assert last.shape == (3, 1, 99)
    torch.testing.assert_close(last[:, 0], full[:, -1])
    with pytest.raises(ValueError, match="logits_to_keep"):
        model(ids, labels=ids, logits_to_keep=1)


# ----------------------------------------------------------------------------- encoder-decoder
@pytest.mark.parametrize("backend", BACKENDS)
def test_seq2seq_cached_generation_equals_uncached(backend):
    model = seq2seq_lm(backend)
    ids = prompts()
    cached = greedy(model, ids)
    assert torch.equal(cached, greedy(model, ids, use_cache=False))
    assert bool((cached[:, 0] == model.config.decoder_start_token_id).all())
    assert cached.shape == (3, 1 + 8)
    beams = model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=8)
    assert torch.equal(beams, model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=8))
    assert torch.equal(beams, model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=8, use_cache=False))


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq2seq_cached_step_equals_recomputing_and_greedy_equals_argmax(backend):
    model = seq2seq_lm(backend)
    ids, mask = left_pad([prompts(1, 7, seed=7)[0], prompts(1, 4, seed=8)[0]], side="right")
    start = torch.full((2, 1), model.config.decoder_start_token_id)
    decoded = start
    with torch.no_grad():
        encoder_outputs = model.get_encoder()(input_ids=ids, attention_mask=mask)
        for _ in range(5):
            logits = model(
                attention_mask=mask, encoder_outputs=encoder_outputs, decoder_input_ids=decoded, use_cache=False
            ).logits[:, -1]
            decoded = torch.cat([decoded, logits.argmax(-1, keepdim=True)], dim=1)
        prefix = model(attention_mask=mask, encoder_outputs=encoder_outputs, decoder_input_ids=decoded[:, :-1])
        cache = prefix.past_key_values
        assert all(cache.is_updated.values()) and len(cache.is_updated) == model.config.num_hidden_layers
        step = model(
            attention_mask=mask,
            encoder_outputs=encoder_outputs,
            decoder_input_ids=decoded[:, -1:],
            past_key_values=cache,
        )
        full = model(attention_mask=mask, encoder_outputs=encoder_outputs, decoder_input_ids=decoded, use_cache=False)
    torch.testing.assert_close(step.logits[:, 0], full.logits[:, -1], atol=1e-5, rtol=0)
    generated = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=5)
    assert torch.equal(generated, decoded)


def test_seq2seq_decoder_deeper_than_encoder():
    # generate() sizes its cache from config.get_text_config(decoder=True): `decoder_layers`.
    model = seq2seq_lm(decoder_layers=3)
    assert (model.model.encoder.encoder.num_layers, model.model.decoder.encoder.num_layers) == (2, 3)
    ids = prompts()
    beams = model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=6)
    assert torch.equal(beams, model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=6, use_cache=False))


def test_seq2seq_padded_source_batch_gives_each_row_its_own_tokens():
    # Sources are right-padded, as encoder-decoder tokenizers do (the encoder's positions start at
    # the first token); the encoder batch runs packed (padding_free), the decoder padded with a cache.
    model = seq2seq_lm()
    rows = [prompts(1, 7, seed=9)[0], prompts(1, 3, seed=10)[0], prompts(1, 5, seed=11)[0]]
    ids, mask = left_pad(rows, side="right")
    batched = greedy(model, ids, attention_mask=mask)
    for i, row in enumerate(rows):
        assert torch.equal(batched[i], greedy(model, row[None])[0]), f"row {i}"


def test_seq2seq_labels_make_shifted_decoder_inputs_and_loss():
    model = seq2seq_lm()
    ids = prompts(2, 6)
    labels = prompts(2, 4, seed=12)
    labels[1, 2:] = -100
    out = model(ids, labels=labels)
    decoder_input_ids = torch.tensor([[1, *labels[0, :3].tolist()], [1, *labels[1, :2].tolist(), PAD]])
    explicit = model(ids, decoder_input_ids=decoder_input_ids, use_cache=False)
    torch.testing.assert_close(out.logits, explicit.logits)
    expected = F.cross_entropy(explicit.logits.reshape(-1, 99), labels.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(out.loss, expected)
    assert out.encoder_last_hidden_state.shape == (2, 6, 32)


def test_seq2seq_embeddings_shared_and_save_load(tmp_path):
    model = seq2seq_lm()
    shared = model.model.encoder.get_input_embeddings().weight
    assert model.model.decoder.get_input_embeddings().weight is shared
    assert model.get_output_embeddings().weight is shared
    ids = prompts()
    before = model.generate(ids, num_beams=3, do_sample=False, max_new_tokens=6)
    model.save_pretrained(tmp_path)
    loaded = TinyForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert loaded.model.decoder.get_input_embeddings().weight is loaded.model.encoder.get_input_embeddings().weight
    assert torch.equal(loaded.generate(ids, num_beams=3, do_sample=False, max_new_tokens=6), before)


def test_training_with_gradient_checkpointing_keeps_no_cache():
    model = causal_lm()
    model.activation_checkpointing_enable()
    model.train()
    ids = prompts(2, 6)
    out = model(ids, use_cache=True)
    assert out.past_key_values is None
    out.logits.sum().backward()
    assert model.model.embeddings.word_embeddings.weight.grad is not None
    with pytest.raises(ValueError, match="gradient checkpointing"):
        model(ids, past_key_values=DynamicCache())


def test_generate_from_inputs_embeds():
    model = causal_lm()
    ids = prompts(2, 6)
    embeds = model.get_input_embeddings()(ids)
    from_embeds = model.generate(inputs_embeds=embeds, do_sample=False, max_new_tokens=5)
    assert torch.equal(from_embeds, greedy(model, ids)[:, 6:11])  # only the new tokens come back


# ----------------------------------------------------------------------------- against transformers' models
# The shared blocks with a reference model's weights must generate exactly its tokens (greedy and
# 3 beams, padded batches): checks positions after the cache, causal masking over cached keys,
# cross-attention caching and beam reordering against transformers' own implementations. The key
# renames here are test-local; the GPT / Transformer variants' key maps supersede them.
def _copy_linear(target: dict, source: dict, ours: str, theirs: list[str], transpose: bool = False) -> None:
    weights = [source[name + ".weight"] for name in theirs]
    target[ours + ".weight"] = torch.cat([w.T if transpose else w for w in weights])
    if theirs[0] + ".bias" in source:
        target[ours + ".bias"] = torch.cat([source[name + ".bias"] for name in theirs])


def _padded_prompts(side: str) -> tuple[torch.Tensor, torch.Tensor]:
    return left_pad([prompts(1, n, seed=20 + n)[0] for n in (7, 3, 5)], side=side)


class TinyGPT2LikeModel(TinyDecoderModel):
    def build_embeddings(self, config):
        # GPT-2 normalises inside the (pre-LN) layers only: no LayerNorm on the embeddings.
        return TransformerEmbeddings(**TransformerEmbeddings.config_kwargs(config), layer_norm=False)


class TinyGPT2LikeForCausalLM(DecoderForCausalLM, TinyPreTrainedModel):
    backbone_class = TinyGPT2LikeModel


@pytest.mark.parametrize("backend", BACKENDS)
def test_generation_matches_gpt2(backend):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    reference_config = GPT2Config(
        vocab_size=99,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_inner=37,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        initializer_range=0.3,
        bos_token_id=1,
        eos_token_id=None,
        pad_token_id=PAD,
    )
    reference_config._attn_implementation = backend
    reference = GPT2LMHeadModel(reference_config).eval()
    torch.manual_seed(0)
    config = tiny_decoder_config(hidden_act="gelu_new")
    config._attn_implementation = backend
    model = TinyGPT2LikeForCausalLM(config).eval()
    theirs = reference.state_dict()
    ours = {
        "model.embeddings.word_embeddings.weight": theirs["transformer.wte.weight"],
        "model.embeddings.position_embeddings.weight": theirs["transformer.wpe.weight"],
        "lm_head.weight": theirs["transformer.wte.weight"],
    }
    _copy_linear(ours, theirs, "model.encoder.final_layer_norm", ["transformer.ln_f"])
    for i in range(2):
        block, layer = f"transformer.h.{i}.", f"model.encoder.layers.{i}."
        for mine, gpt2, conv1d in [
            ("attention.qkv", "attn.c_attn", True),
            ("attention.out", "attn.c_proj", True),
            ("ffn.up", "mlp.c_fc", True),
            ("ffn.down", "mlp.c_proj", True),
            ("attention_norm", "ln_1", False),
            ("ffn_norm", "ln_2", False),
        ]:
            _copy_linear(ours, theirs, layer + mine, [block + gpt2], transpose=conv1d)
    model.load_state_dict(ours, strict=True)
    ids, mask = _padded_prompts("left")
    for options in (dict(do_sample=False), dict(num_beams=3, do_sample=False)):
        expected = reference.generate(ids, attention_mask=mask, max_new_tokens=10, **options)
        assert torch.equal(model.generate(ids, attention_mask=mask, max_new_tokens=10, **options), expected)
    assert len(set(expected[:, 7:].flatten().tolist())) > 3
    with torch.no_grad():
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # GPT-2 takes positions; ours derives them from the mask
        real = mask.bool()
        torch.testing.assert_close(
            model(ids, attention_mask=mask).logits[real],
            reference(ids, attention_mask=mask, position_ids=positions).logits[real],
            atol=1e-5,
            rtol=0,
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq2seq_generation_matches_bart(backend):
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    reference_config = BartConfig(
        vocab_size=99,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=37,
        decoder_ffn_dim=37,
        max_position_embeddings=64,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.3,
        decoder_start_token_id=1,
        bos_token_id=1,
        eos_token_id=None,
        forced_eos_token_id=None,
        pad_token_id=PAD,
    )
    reference_config._attn_implementation = backend
    reference = BartForConditionalGeneration(reference_config).eval()
    model = seq2seq_lm(backend, pre_layer_norm=False)  # BART is post-LN with an embedding LayerNorm, like ours
    theirs = reference.state_dict()
    ours = {"lm_head.weight": theirs["model.shared.weight"]}
    for side in ("encoder", "decoder"):
        prefix = f"model.{side}."
        ours[prefix + "embeddings.word_embeddings.weight"] = theirs["model.shared.weight"]
        # BART's learned positions start at row 2 of its table.
        ours[prefix + "embeddings.position_embeddings.weight"] = theirs[prefix + "embed_positions.weight"][2:]
        _copy_linear(ours, theirs, prefix + "embeddings.layer_norm", [prefix + "layernorm_embedding"])
        for i in range(2):
            block, layer = f"{prefix}layers.{i}.", f"{prefix}encoder.layers.{i}."
            renames = [
                ("attention.qkv", ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"]),
                ("attention.out", ["self_attn.out_proj"]),
                ("attention_norm", ["self_attn_layer_norm"]),
                ("ffn.up", ["fc1"]),
                ("ffn.down", ["fc2"]),
                ("ffn_norm", ["final_layer_norm"]),
            ]
            if side == "decoder":
                renames += [
                    ("cross_attention.query", ["encoder_attn.q_proj"]),
                    ("cross_attention.key_value", ["encoder_attn.k_proj", "encoder_attn.v_proj"]),
                    ("cross_attention.out", ["encoder_attn.out_proj"]),
                    ("cross_attention_norm", ["encoder_attn_layer_norm"]),
                ]
            for mine, bart in renames:
                _copy_linear(ours, theirs, layer + mine, [block + name for name in bart])
    model.load_state_dict(ours, strict=True)
    ids, mask = _padded_prompts("right")
    for options in (dict(do_sample=False), dict(num_beams=3, do_sample=False)):
        expected = reference.generate(ids, attention_mask=mask, max_new_tokens=10, **options)
        assert torch.equal(model.generate(ids, attention_mask=mask, max_new_tokens=10, **options), expected)
    assert len(set(expected[:, 1:].flatten().tolist())) > 3
    targets = prompts(3, 6, seed=30)
    with torch.no_grad():
        torch.testing.assert_close(
            model(ids, attention_mask=mask, decoder_input_ids=targets).logits,
            reference(ids, attention_mask=mask, decoder_input_ids=targets).logits,
            atol=1e-5,
            rtol=0,
        )


# ----------------------------------------------------------------------------- training layouts and memories
@pytest.mark.parametrize("side, first_token_labelled", [("right", True), ("left", False), ("left", True)])
def test_causal_lm_training_packed_or_padded_gives_the_padded_loss(side, first_token_labelled):
    # Without a cache (training) a decoder batch may run packed; loss and gradients must not move.
    # A left-padded row whose first token is a target is predicted from a padding slot (as in
    # transformers), which only the padded layout computes: that batch runs padded.
    ids, mask = left_pad([prompts(1, n, seed=40 + n)[0] for n in (9, 4, 6)], side=side)
    labels = ids.masked_fill(mask == 0, -100)
    if not first_token_labelled:
        labels[torch.arange(3), mask.argmax(dim=1)] = -100
    results = []
    for padding_free in (False, True):
        model = causal_lm(padding_free=padding_free)
        out = model(ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        results.append((out.loss, out.logits, model.model.embeddings.word_embeddings.weight.grad))
    (padded_loss, padded_logits, padded_grad), (loss, logits, grad) = results
    real = mask.bool()
    torch.testing.assert_close(loss, padded_loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(logits[real], padded_logits[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(grad, padded_grad, atol=1e-5, rtol=0)
    ran_packed = bool((logits[~real] == 0).all())  # the packed layout leaves zeros at padding
    assert ran_packed == (side == "right" or not first_token_labelled)


def test_seq2seq_training_with_padded_targets_packed_or_padded():
    ids, mask = left_pad([prompts(1, n, seed=50 + n)[0] for n in (7, 3)], side="right")
    targets, target_mask = left_pad([prompts(1, n, seed=60 + n)[0] for n in (6, 2)], side="right")
    labels = targets.masked_fill(target_mask == 0, -100)
    decoder_input_ids = torch.cat([torch.ones(2, 1, dtype=torch.long), targets[:, :-1]], dim=1)
    decoder_mask = torch.cat([torch.ones(2, 1, dtype=torch.long), target_mask[:, :-1]], dim=1)
    outputs = []
    for padding_free in (False, True):
        model = seq2seq_lm(padding_free=padding_free)
        outputs.append(
            model(
                ids,
                attention_mask=mask,
                decoder_input_ids=decoder_input_ids,
                decoder_attention_mask=decoder_mask,
                labels=labels,
            )
        )
    torch.testing.assert_close(outputs[1].loss, outputs[0].loss, atol=1e-5, rtol=0)
    padding = decoder_mask == 0
    assert bool((outputs[1].logits[padding] == 0).all())  # the decoder really ran packed (with cross-attention)
    assert not bool((outputs[0].logits[padding] == 0).all())


def test_backbone_memories_continue_a_causal_run():
    # Transformer-XL's recurrence through the backbone: segment 2 with segment 1's memories (and
    # positions that continue) equals one causal run over both segments at segment 2's positions.
    from hf_variants.modules.memory import SegmentMemory

    model = causal_lm().model
    ids = prompts(2, 9)
    positions = torch.arange(9).expand(2, 9)
    with torch.no_grad():
        full = model(ids, position_ids=positions, use_cache=False).last_hidden_state
        memory = SegmentMemory(None, num_layers=2, mem_len=5)
        model(ids[:, :5], position_ids=positions[:, :5], use_cache=False, memories=memory)
        memory = SegmentMemory(memory.updated(), num_layers=2, mem_len=5)
        mask = torch.ones(2, 4, dtype=torch.long)  # the new tokens' mask: memory keys are added inside
        second = model(ids[:, 5:], attention_mask=mask, position_ids=positions[:, 5:], use_cache=False, memories=memory)
    torch.testing.assert_close(second.last_hidden_state, full[:, 5:], atol=1e-5, rtol=0)
    assert [m.shape for m in memory.updated()] == [(2, 5, 32)] * 2
    with pytest.raises(ValueError, match="either memories or a cache"):
        model(ids[:, 5:], use_cache=True, memories=SegmentMemory(None, num_layers=2, mem_len=5))


def test_packed_documents_bias_equals_each_document_alone():
    # Two documents back to back in one row, positions restarting, with the block-diagonal causal
    # bias of objectives.clm: each document's logits equal running it alone.
    from hf_variants.objectives.clm import document_causal_bias

    model = causal_lm()
    first, second = prompts(1, 5, seed=70)[0], prompts(1, 4, seed=71)[0]
    row = torch.cat([first, second])[None]
    document_ids = torch.tensor([[0] * 5 + [1] * 4])
    positions = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2, 3]])
    with torch.no_grad():
        packed = model(
            row, position_ids=positions, attention_bias=document_causal_bias(document_ids), use_cache=False
        ).logits
        alone = [model(doc[None], use_cache=False).logits for doc in (first, second)]
    torch.testing.assert_close(packed, torch.cat(alone, dim=1), atol=1e-5, rtol=0)


def test_bad_generation_inputs_raise_value_errors():
    model = causal_lm()
    ids = prompts(2, 4)
    with pytest.raises(ValueError, match=r"attention_mask has shape \(2, 4\), expected \(2, 5\)"):
        cache = model(ids).past_key_values
        model(ids[:, :1], attention_mask=torch.ones(2, 4, dtype=torch.long), past_key_values=cache)
    with pytest.raises(ValueError, match="tuples of tensors are not supported"):
        model(ids, past_key_values=((torch.zeros(1),),))
    with pytest.raises(ValueError, match="embedding_size=16 != hidden_size=32"):
        causal_lm(embedding_size=16)
    seq2seq = seq2seq_lm()
    with pytest.raises(ValueError, match="decoder_start_token_id must be set"):
        seq2seq_lm(decoder_start_token_id=None)(ids, labels=ids)
    with pytest.raises(ValueError, match="pass encoder_hidden_states"):
        seq2seq.model.decoder(ids)
    with pytest.raises(ValueError, match="StaticCache is not supported"):
        model.generate(ids, max_new_tokens=2, cache_implementation="static")


@pytest.mark.parametrize("build", [causal_lm, seq2seq_lm])
def test_resize_token_embeddings_keeps_every_tie(build):
    model = build()
    model.resize_token_embeddings(120)
    embeddings = model.get_input_embeddings().weight
    assert embeddings.shape == (120, 32) and model.get_output_embeddings().weight is embeddings
    if build is seq2seq_lm:
        assert model.model.decoder.get_input_embeddings().weight is embeddings
    ids = torch.randint(99, 120, (2, 5))  # ids only the resized table has
    assert model(ids, labels=ids).logits.shape == (2, 5, 120)
    assert model.generate(ids, max_new_tokens=3, do_sample=False).shape[0] == 2
    from hf_variants import BertConfig

    with pytest.raises(ValueError, match="needs a DecoderConfig"):
        TinyDecoderModel(BertConfig(**{k: v for k, v in TINY.items() if k != "bos_token_id"}))
