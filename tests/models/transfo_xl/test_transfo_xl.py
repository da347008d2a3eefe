"""Transformer-XL against the paper's equations (transformers v5 has no Transformer-XL to compare
with): the relative score A_ij = (q_i + u)·k_j + (q_i + v)·W_r R_{i-j} computed naively equals the
shifted one; segment-level recurrence equals one causal run over the concatenation wherever the
memory covers the whole history (also with a memory longer than the training segment); no
gradient reaches the memory; mem_len is kept; save/load through the Auto classes; bad input."""

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_variants
from hf_variants import TransfoXLConfig, TransfoXLLMHeadModel, TransfoXLModel
from hf_variants.modules.relative_attention import RelativeAttention, relative_encodings, sinusoids

SEGMENT = 5


def tiny(**overrides) -> TransfoXLConfig:
    fields = dict(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        head_dim=8,
        intermediate_size=37,
        mem_len=SEGMENT,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        clamp_len=-1,
    )
    return TransfoXLConfig(**{**fields, **overrides})


def test_relative_scores_follow_the_paper_equation():
    """Scores of query i (after M memory positions) against key j: content + position terms with
    R the sinusoid of the distance M + i - j, clamped at clamp_len, for every visible pair."""
    torch.manual_seed(0)
    attention = RelativeAttention(16, 2, segment_terms=False)
    for parameter in attention.parameters():
        torch.nn.init.normal_(parameter, std=0.5)
    memory_length, length, clamp = 3, 4, 5
    keys_length = memory_length + length
    states = torch.randn(1, keys_length, 16)
    query = attention.project_queries(states[:, memory_length:])
    key, _ = attention.keys_values(states)
    encodings = relative_encodings(length, keys_length, 16, bidirectional=False, clamp_len=clamp)
    bias = attention.relative_bias(query, attention.position_keys(encodings), None, keys_length)
    for i in range(length):
        for j in range(memory_length + i + 1):  # the visible keys
            distance = torch.tensor([float(min(memory_length + i - j, clamp))])
            r = torch.einsum("h,hnd->nd", sinusoids(distance, 16)[0], attention.r)
            position = ((query[0, :, i] + attention.r_r_bias) * r).sum(-1) * attention.scale
            torch.testing.assert_close(bias[0, :, i, j], position, atol=1e-5, rtol=0)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("mem_len", [SEGMENT, 3 * SEGMENT])
def test_recurrence_equals_one_causal_run_over_the_concatenation(implementation, mem_len):
    """mem_len = one segment: segment 2 with segment 1's memory equals the concatenated run's
    segment-2 positions (the maths says exact: every earlier position is in memory). mem_len =
    three segments (evaluation with a longer memory than training): all three segments do."""
    torch.manual_seed(0)
    model = TransfoXLLMHeadModel(tiny(mem_len=mem_len)).eval()
    model.config._attn_implementation = implementation
    segments = 2 if mem_len == SEGMENT else 3
    ids = torch.randint(0, 99, (2, segments * SEGMENT))
    with torch.no_grad():
        whole = model(ids).logits
        mems = None
        for k in range(segments):
            out = model(ids[:, k * SEGMENT : (k + 1) * SEGMENT], mems=mems)
            torch.testing.assert_close(out.logits, whole[:, k * SEGMENT : (k + 1) * SEGMENT], atol=1e-5, rtol=0)
            mems = out.mems
            assert mems[0].shape == (min(mem_len, (k + 1) * SEGMENT), 2, 32)
        alone = model(ids[:, -SEGMENT:]).logits  # without memory the last segment reads less context
    assert not torch.allclose(alone, whole[:, -SEGMENT:], atol=1e-3)


def test_memory_shorter_than_the_history_drops_the_oldest_states():
    """mem_len 3 < segment 5: segment 2 equals a causal run in which only the last 3 states of
    segment 1 are in memory, i.e. the memory is exactly those states (truncation, not mixing)."""
    torch.manual_seed(0)
    model = TransfoXLModel(tiny(mem_len=3)).eval()
    ids = torch.randint(0, 99, (1, 2 * SEGMENT))
    with torch.no_grad():
        first = model(ids[:, :SEGMENT], output_hidden_states=True)
        assert first.mems[0].shape == (3, 1, 32)
        for layer, mem in enumerate(first.mems):
            torch.testing.assert_close(mem[:, 0], first.hidden_states[layer][0, -3:], atol=0, rtol=0)


def test_no_gradient_reaches_the_memory():
    model = TransfoXLLMHeadModel(tiny()).train()
    ids = torch.randint(0, 99, (2, 2 * SEGMENT))
    first = model(ids[:, :SEGMENT], labels=ids[:, :SEGMENT])
    assert all(not m.requires_grad and m.grad_fn is None for m in first.mems)
    second = model(ids[:, SEGMENT:], mems=first.mems, labels=ids[:, SEGMENT:])
    second.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    model(ids[:, SEGMENT:], mems=[m.clone() for m in first.mems], labels=ids[:, SEGMENT:]).loss.backward()
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(parameter.grad, grads[name], atol=0, rtol=0, msg=name)
    first.loss.backward()  # segment 1's graph is intact: nothing of it was consumed by segment 2


def test_lm_loss_is_next_token_cross_entropy_and_training_lowers_it():
    torch.manual_seed(0)
    model = TransfoXLLMHeadModel(tiny())
    assert model.lm_head.weight is model.transformer.word_embeddings.weight
    ids = torch.randint(0, 99, (2, 8))
    out = model.eval()(ids, labels=ids)
    expected = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, 99), ids[:, 1:].reshape(-1))
    torch.testing.assert_close(out.loss, expected)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(5):
        loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step(), optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_save_load_through_auto_classes(implementation, tmp_path):
    model = TransfoXLLMHeadModel(tiny()).eval()
    model.save_pretrained(tmp_path)
    assert not any(p.suffix in (".bin", ".pt", ".pkl") for p in tmp_path.iterdir())
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation=implementation).eval()
    assert type(reloaded) is TransfoXLLMHeadModel
    ids = torch.randint(0, 99, (2, 6))
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids).logits, model(ids).logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m, ids: m(ids, attention_mask=torch.tensor([[1, 1, 1, 0]] * 2)), "padding"),
        (lambda m, ids: m(ids, mems=[torch.zeros(3, 1, 32)] * 2), "memories"),
        (lambda m, ids: m(ids, mems=[torch.zeros(3, 2, 32)]), "one per layer"),
        (lambda m, ids: m(ids + 99), "input_ids"),
        (lambda m, ids: m(ids, labels=ids[:, :2]), "labels"),
    ],
)
def test_bad_input_is_a_value_error(call, message):
    model = TransfoXLLMHeadModel(tiny()).eval()
    with pytest.raises(ValueError, match=message):
        call(model, torch.randint(0, 99, (2, 4)))


@pytest.mark.parametrize("field, value", [("mem_len", -1), ("is_decoder", False), ("pre_layer_norm", True)])
def test_invalid_config_is_a_value_error(field, value):
    with pytest.raises(ValueError, match=field):
        TransfoXLModel(tiny(**{field: value}))


def test_named_mini_config_and_original_names():
    config = hf_variants.named_config("transfo-xl-mini")
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("hfv_transfo_xl", 4, 256)
    assert TransfoXLConfig(d_model=64, n_head=4, d_head=16, dropatt=0.0).attention_probs_dropout_prob == 0.0


def test_word_vocabulary_is_json_and_round_trips(tmp_path):
    from transformers import AutoTokenizer

    from hf_variants.models.transfo_xl import word_level_tokenizer

    lines = ["the cat sat on the mat", "the dog sat", "a rare word"]
    tokenizer = word_level_tokenizer(lines, min_frequency=2)
    ids = tokenizer("the cat sat")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["the", "<unk>", "sat", "<eos>"]  # cat is seen once
    tokenizer.save_pretrained(tmp_path)
    assert (tmp_path / "tokenizer.json").exists()
    assert not any(p.suffix in (".bin", ".pkl", ".pickle") for p in tmp_path.iterdir())
    assert AutoTokenizer.from_pretrained(tmp_path)("the cat sat")["input_ids"] == ids
