"""Per-layer state in the shared blocks: the Cache threaded through MultiHeadAttention and
LayerStack (self- and cross-attention), the bottom-right causal mask, and the Transformer-XL
segment memory (modules/memory.py)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, EncoderDecoderCache

from hf_variants.modules.attention import MultiHeadAttention
from hf_variants.modules.encoder import LayerSpec, LayerStack
from hf_variants.modules.layout import BatchLayout
from hf_variants.modules.masks import extend_for_memory, make_attention_bias
from hf_variants.modules.memory import SegmentMemory
from hf_variants.modules.padding import UnpaddedBatch

BACKENDS = ("eager", "sdpa")
HIDDEN = 32


def stack(
    sharing: str = "none", pre_layer_norm: bool = True, cross_attention: bool = False, seed: int = 0
) -> LayerStack:
    torch.manual_seed(seed)
    spec = LayerSpec(
        hidden_size=HIDDEN,
        num_attention_heads=4,
        intermediate_size=37,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pre_layer_norm=pre_layer_norm,
        cross_attention=cross_attention,
    )
    return LayerStack(spec, 3, sharing=sharing).eval()


def causal(hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> BatchLayout:
    """The padded causal layout of a (B, T, H) batch; ``attention_mask`` (B, S) may cover cached or
    memory keys before the T new positions."""
    bias = None if attention_mask is None else make_attention_bias(attention_mask.bool(), hidden.dtype)
    return BatchLayout(hidden.shape[0], hidden.shape[1], bias, is_causal=True)


def states(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, length, HIDDEN, generator=torch.Generator().manual_seed(seed))


def test_causal_bias_with_cached_keys_is_bottom_right_aligned():
    mask = torch.tensor([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
    bias = make_attention_bias(mask, torch.float32, causal=True, query_length=2)
    visible = bias[:, 0] == 0  # (B, T=2, S=5)
    # Query 0 is key position 3, query 1 key position 4; row 0's key 0 is padding.
    assert visible[1].tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert visible[0].tolist() == [[False, True, True, True, False], [False, True, True, True, True]]
    no_mask = make_attention_bias(None, torch.float32, causal=True, query_length=2, key_length=5)
    assert (no_mask[0, 0] == 0).tolist() == visible[1].tolist()


def test_layer_indices_are_depths():
    layers = stack(cross_attention=True)
    for depth, layer in enumerate(layers.layers):
        assert layer.attention.layer_idx == depth and layer.cross_attention.layer_idx == depth


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sharing", ["none", "all"])
def test_stack_with_cache_step_by_step_equals_one_causal_run(backend, sharing):
    layers = stack(sharing)
    hidden = states(2, 7)
    with torch.no_grad():
        full, *_ = layers(hidden, causal(hidden), attn_implementation=backend)
        cache = DynamicCache()
        outputs = [layers(hidden[:, :4], causal(hidden[:, :4]), past_key_values=cache, attn_implementation=backend)[0]]
        for t in range(4, 7):
            outputs.append(
                layers(
                    hidden[:, t : t + 1],
                    causal(hidden[:, t : t + 1]),
                    past_key_values=cache,
                    attn_implementation=backend,
                )[0]
            )
    # One cache entry per depth even when one module serves every depth.
    assert len(cache.layers) == 3 and cache.get_seq_length() == 7
    torch.testing.assert_close(torch.cat(outputs, dim=1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_attention_keys_are_computed_once_and_reused(backend):
    layers = stack(cross_attention=True)
    hidden, source = states(2, 5), states(2, 6, seed=2)
    source_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    source_bias = make_attention_bias(source_mask.bool(), torch.float32)
    kwargs = dict(encoder_attention_bias=source_bias, attn_implementation=backend)
    with torch.no_grad():
        full, *_ = layers(hidden, causal(hidden), encoder_hidden_states=source, **kwargs)
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        first, *_ = layers(
            hidden[:, :3], causal(hidden[:, :3]), encoder_hidden_states=source, past_key_values=cache, **kwargs
        )
        assert cache.is_updated == {0: True, 1: True, 2: True}
        assert cache.cross_attention_cache.layers[0].keys.shape == (2, 4, 6, 8)
        # Later steps read the stored encoder keys/values: different encoder states change nothing.
        rest, *_ = layers(
            hidden[:, 3:],
            causal(hidden[:, 3:]),
            encoder_hidden_states=torch.zeros_like(source),
            past_key_values=cache,
            **kwargs,
        )
    assert cache.get_seq_length() == 5
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pre_layer_norm", [True, False])
def test_segment_memory_equals_one_causal_run_over_both_segments(backend, pre_layer_norm):
    layers = stack(pre_layer_norm=pre_layer_norm)
    segment_1, segment_2 = states(2, 5), states(2, 4, seed=3)
    with torch.no_grad():
        both = torch.cat([segment_1, segment_2], dim=1)
        full, *_ = layers(both, causal(both), attn_implementation=backend)
    memory_1 = SegmentMemory(None, num_layers=3, mem_len=5)
    out_1, *_ = layers(segment_1, causal(segment_1), memories=memory_1, attn_implementation=backend)
    mems = memory_1.updated()
    assert len(mems) == 3 and all(m.shape == (2, 5, HIDDEN) and not m.requires_grad for m in mems)
    torch.testing.assert_close(mems[0], segment_1)  # layer 0's memory is its input
    segment_2 = segment_2.clone().requires_grad_(True)
    memory_2 = SegmentMemory(mems, num_layers=3, mem_len=5)
    out_2, *_ = layers(segment_2, causal(segment_2), memories=memory_2, attn_implementation=backend)
    torch.testing.assert_close(out_1, full[:, :5], atol=1e-5, rtol=0)
    torch.testing.assert_close(out_2, full[:, 5:], atol=1e-5, rtol=0)
    # Gradient reaches the current segment and the weights, never the memory.
    out_2.sum().backward()
    assert segment_2.grad is not None and all(m.grad is None for m in mems)
    assert layers.layers[0].attention.qkv.weight.grad is not None
    # The next memory keeps the last mem_len positions of (memory + segment 2).
    next_mems = memory_2.updated()
    torch.testing.assert_close(next_mems[0], torch.cat([mems[0], segment_2.detach()], dim=1)[:, -5:])


def test_segment_memory_with_padding_mask_and_reuse_length():
    layers = stack()
    segment_1, segment_2 = states(2, 4), states(2, 3, seed=4)
    memory = SegmentMemory(None, num_layers=3, mem_len=8, reuse_length=3)
    layers(segment_1, causal(segment_1), memories=memory)
    mems = memory.updated()
    assert mems[0].shape == (2, 3, HIDDEN)  # only the first reuse_length positions are kept
    memory_2 = SegmentMemory(mems, num_layers=3, mem_len=8)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    extended = extend_for_memory(mask, memory_2.length)
    assert extended.tolist() == [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]]
    with torch.no_grad():
        out, *_ = layers(segment_2, causal(segment_2, extended), memories=memory_2)
        reference_input = torch.cat([segment_1[:, :3], segment_2], dim=1)
        reference, *_ = layers(reference_input, causal(reference_input))
    # Padding is row 1's last key: causal masking already hides it from the real queries.
    torch.testing.assert_close(out[0], reference[0, 3:], atol=1e-5, rtol=0)
    torch.testing.assert_close(out[1, :2], reference[1, 3:5], atol=1e-5, rtol=0)
    # At the padding query the mask does bite (it may not see itself): the bias was applied, not dropped.
    assert not torch.allclose(out[1, 2], reference[1, 5], atol=1e-3)
    keep_all = SegmentMemory(mems, num_layers=3, mem_len=None)  # XLNet's mem_len=None keeps everything
    layers(segment_2, causal(segment_2, extended), memories=keep_all)
    assert keep_all.updated()[0].shape == (2, 6, HIDDEN)
    with pytest.raises(ValueError, match="attention_bias covers 3 keys but there are 6"):
        layers(segment_2, causal(segment_2, mask), memories=SegmentMemory(mems, 3, 8))


def test_bad_state_arguments_raise_value_errors():
    attention = MultiHeadAttention(HIDDEN, 4)
    hidden = states(2, 3)
    with pytest.raises(ValueError, match="needs the layer index"):
        attention(hidden, past_key_values=DynamicCache())
    with pytest.raises(ValueError, match="must be a transformers Cache"):
        attention(hidden, past_key_values=((hidden, hidden),), layer_idx=0)
    with pytest.raises(ValueError, match="either past_key_values or memory"):
        attention(hidden, past_key_values=DynamicCache(), layer_idx=0, memory=states(2, 2))
    with pytest.raises(ValueError, match=r"memory has shape \(3, 2, 32\)"):
        attention(hidden, memory=states(3, 2))
    packed = UnpaddedBatch.from_attention_mask(torch.tensor([[1, 1, 1], [1, 1, 0]]))
    with pytest.raises(ValueError, match="padded layout"):
        attention(packed.unpad(hidden), unpadded=packed, past_key_values=DynamicCache(), layer_idx=0)
    with pytest.raises(ValueError, match="memories hold 2 layers, the stack has 3"):
        stack()(hidden, causal(hidden), memories=SegmentMemory(None, num_layers=2, mem_len=4))
    with pytest.raises(ValueError, match="one per layer"):
        SegmentMemory([states(2, 2)], num_layers=3, mem_len=4)
    with pytest.raises(ValueError, match="mem_len must be >= 0"):
        SegmentMemory(None, num_layers=3, mem_len=-1)
