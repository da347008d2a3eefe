"""modules/masks.py: every conversion against a hand-built tensor, every check against bad input."""

import pytest
import torch

from hf_variants.modules import masks

M = torch.finfo(torch.float32).min  # the "hidden" value of a float32 bias


def bias(visible: list) -> torch.Tensor:
    """Hand-built additive bias: 1 -> 0.0 (visible), 0 -> M (hidden)."""
    return torch.where(torch.tensor(visible, dtype=torch.bool), 0.0, M)


def test_additive_mask_and_key_padding_bias():
    assert torch.equal(masks.additive_mask(torch.tensor([[True, False]]), torch.float32), bias([[0, 1]]))
    keep = torch.tensor([[1, 1, 0], [1, 0, 0]])
    got = masks.key_padding_bias(keep, torch.float32)
    assert got.shape == (2, 1, 1, 3)
    assert torch.equal(got, bias([[1, 1, 0], [1, 0, 0]])[:, None, None, :])
    assert masks.key_padding_bias(keep, torch.float16).dtype == torch.float16


def test_make_attention_bias_skips_a_mask_hiding_nothing_and_aligns_causal_bottom_right():
    assert masks.make_attention_bias(torch.ones(2, 3), torch.float32) is None
    assert masks.make_attention_bias(None, torch.float32) is None
    causal = masks.make_attention_bias(None, torch.float32, causal=True, query_length=2, key_length=4)
    assert torch.equal(causal, bias([[1, 1, 1, 0], [1, 1, 1, 1]])[None, None])  # 2 cached keys come first
    both = masks.make_attention_bias(torch.tensor([[0, 1, 1]]), torch.float32, causal=True, query_length=2)
    # key 0 is padding; query 0 (key position 1) does not see key 2; hidden twice stays finite (M, not -inf)
    assert torch.equal(both, bias([[[[0, 1, 0], [0, 1, 1]]]]))


def test_combine_biases_clamps_two_hidden_entries_to_the_finite_minimum():
    hidden = torch.full((1, 2), M)
    assert torch.equal(masks.combine_biases(hidden, hidden, torch.float32), hidden)
    assert masks.combine_biases(None, hidden, torch.float32) is hidden
    assert masks.combine_biases(hidden, None, torch.float32) is hidden
    assert torch.equal(masks.with_causal_bias(None, 2, 2, torch.float32, None), bias([[1, 0], [1, 1]])[None, None])


def test_document_bias_keeps_attention_inside_each_document():
    got = masks.document_bias(torch.tensor([[0, 0, 1, -1]]), torch.float32)
    expected = [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]  # the padding query sees itself only
    assert torch.equal(got, bias([expected])[:, None])


def test_document_causal_bias_is_the_document_bias_made_causal():
    """The collator's packed-CLM bias and the layout's document bias + causal mask agree."""
    document_ids = torch.tensor([[0, 0, 1, 1, 1, -1], [0, 1, 1, 2, -1, -1]])
    causal = masks.document_causal_bias(document_ids)
    assert torch.equal(
        causal, masks.with_causal_bias(masks.document_bias(document_ids, torch.float32), 6, 6, torch.float32, None)
    )
    assert torch.equal(masks.document_causal_mask(document_ids), causal == 0)
    with pytest.raises(ValueError, match="document_ids must be \\(batch, length\\)"):
        masks.document_causal_mask(torch.zeros(4, dtype=torch.long))


def test_memory_extension_prefix_split_and_new_tokens():
    mask = torch.tensor([[1, 0], [1, 1]])
    assert masks.extend_for_memory(mask, 2).tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert masks.extend_for_memory(mask, 0) is mask
    prefix, tokens = masks.split_prefix_mask(torch.tensor([[0, 1, 1, 0]]), 2, 2)
    assert prefix.tolist() == [[0, 1]] and tokens.tolist() == [[1, 0]]
    assert masks.split_prefix_mask(mask, 3, 2) == (None, mask)
    with pytest.raises(ValueError, match="attention_mask has 3 columns: expected the 2 tokens, or the 2 prefix"):
        masks.split_prefix_mask(torch.ones(1, 3), 2, 2)
    assert masks.new_token_mask(torch.tensor([[1, 1, 0]]), 1).tolist() == [[1, 0]]
    assert masks.zeroing_mask(torch.ones(2, 3), 2) is None
    assert masks.zeroing_mask(torch.tensor([[1, 1, 0]]), 2).tolist() == [[1, 0]]


def test_memory_causal_bias_and_same_length():
    assert torch.equal(masks.memory_causal_bias(2, 1, torch.float32, None), bias([[1, 1, 0], [1, 1, 1]])[None, None])
    same = masks.memory_causal_bias(2, 1, torch.float32, None, same_length=True, mem_len=1)
    assert torch.equal(same, bias([[0, 1, 0], [0, 0, 1]])[None, None])  # every query sees mem_len keys


def test_two_stream_biases_content_sees_itself_query_stream_does_not():
    content, query = masks.two_stream_biases(torch.tensor([[1, 0]]), None, None, 1, 2, 0, None, torch.float32)
    assert torch.equal(content, bias([[[1, 0], [1, 1]]])[:, None])
    assert torch.equal(query, bias([[[1, 0]]])[:, None])  # (B, 1, 1, S): the same keys hidden for every query
    perm = torch.tensor([[[0, 1], [0, 0]]])  # token 0 may not see token 1
    content, query = masks.two_stream_biases(None, None, perm, 1, 2, 1, None, torch.float32)
    assert torch.equal(query, bias([[[1, 1, 0], [1, 1, 1]]])[:, None])  # the memory column is always visible
    assert masks.two_stream_biases(None, None, None, 1, 2, 0, None, torch.float32) == (None, None)
    with pytest.raises(ValueError, match="either attention_mask"):
        masks.two_stream_biases(torch.ones(1, 2), torch.zeros(1, 2), None, 1, 2, 0, None, torch.float32)
    with pytest.raises(ValueError, match=r"perm_mask has shape \(1, 2\), expected \(1, 2, 2\)"):
        masks.two_stream_biases(None, None, torch.zeros(1, 2), 1, 2, 0, None, torch.float32)


def test_reading_a_mask():
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    assert masks.reads_a_padding_position(mask, torch.tensor([[0], [0]]))
    assert not masks.reads_a_padding_position(mask, torch.tensor([[2], [0]]))
    assert not masks.reads_a_padding_position(
        mask, torch.tensor([[0], [0]]), slots_read=torch.tensor([[False], [True]])
    )
    assert not masks.reads_a_padding_position(None, torch.tensor([[0]]))
    labels = torch.tensor([[5, -100, 7], [-100, -100, 4]])
    assert masks.targets_at_padding(labels, mask, -100)  # row 0: target 5 at padding position 0
    assert not masks.targets_at_padding(labels, torch.tensor([[1, 0, 1], [1, 1, 1]]), -100)
    assert masks.targets_at_padding(labels, torch.tensor([[1, 0, 1], [1, 1, 1]]), -100, shifted=True)  # 1 predicts 7
    assert not masks.targets_at_padding(labels, torch.ones(2, 2), -100)  # shapes differ: not a per-token mask
    assert masks.is_left_padded(mask)
    assert not masks.is_left_padded(torch.tensor([[1, 1, 0]]))
    assert masks.mask_from_lengths(torch.tensor([2, 0]), 2, 3, torch.device("cpu")).tolist() == [[1, 1, 0], [0, 0, 0]]
    assert masks.mask_from_pad_tokens(torch.tensor([[5, 0]]), 0).tolist() == [[1, 0]]
    assert masks.mask_from_pad_tokens(torch.tensor([[5, 6]]), 0) is None


@pytest.mark.parametrize("value", [0.5, 2.0, -1.0])
def test_mask_values_other_than_0_and_1_raise(value):
    with pytest.raises(ValueError, match=f"attention_mask must hold only 0 .* found {value}"):
        masks.check_mask_values(torch.tensor([[1.0, value]]))


def test_key_mask_shape_checks_name_the_problem():
    masks.check_key_mask(torch.ones(2, 5, dtype=torch.bool), 2, 3, past_length=2)
    with pytest.raises(ValueError, match=r"expected \(2, 5\) \(cached positions 2 \+ new tokens 3\)"):
        masks.check_key_mask(torch.ones(2, 3), 2, 3, past_length=2)
    with pytest.raises(ValueError, match=r"expected \(2, 3\) like input_ids"):
        masks.check_key_mask(torch.ones(3), 2, 3, like=" like input_ids")
    with pytest.raises(ValueError, match="must be all ones"):
        masks.check_no_padding(torch.tensor([[1, 0]]), "Transformer-XL")
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 3\]"):
        masks.mask_from_lengths(torch.tensor([4]), 1, 3, torch.device("cpu"))
    with pytest.raises(ValueError, match="one length per row"):
        masks.mask_from_lengths(torch.tensor([1, 2]), 1, 3, torch.device("cpu"))
