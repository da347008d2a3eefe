"""TiedDecoder's decoding-step layouts (a few rows, no autograd): the same logits as nn.Linear."""

import pytest
import torch
import torch.nn.functional as F

from hf_variants.modules.heads import DECODE_ROWS, TiedDecoder


def decoder(bias: bool = False) -> TiedDecoder:
    torch.manual_seed(0)
    return TiedDecoder(32, 301, bias=bias)


@pytest.mark.parametrize("rows", [1, 2, 8, DECODE_ROWS, DECODE_ROWS + 1])
@pytest.mark.parametrize("bias", [False, True])
def test_decoding_rows_give_linear_logits(rows, bias):
    head = decoder(bias)
    inputs = torch.randn(rows, 1, 32)
    with torch.no_grad():
        logits = head(inputs)
    assert logits.shape == (rows, 1, 301)
    torch.testing.assert_close(logits, F.linear(inputs, head.weight, head.bias), atol=1e-5, rtol=0)


def test_cached_layout_follows_in_place_weight_updates():
    head = decoder()
    inputs = torch.randn(1, 32)
    with torch.no_grad():
        head(inputs)
        head.weight.mul_(2.0)  # e.g. an optimizer step or a loaded checkpoint
        torch.testing.assert_close(head(inputs), F.linear(inputs, head.weight), atol=1e-5, rtol=0)


def test_with_autograd_the_weight_gets_its_gradient():
    head = decoder()
    inputs = torch.randn(1, 32)
    head(inputs).sum().backward()
    torch.testing.assert_close(head.weight.grad, inputs.expand(301, 32), atol=1e-6, rtol=0)
    assert head._decode_weight is None  # training keeps no extra copy
