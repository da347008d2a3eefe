"""Comparison helpers shared by the parity tests of every variant (fp32, max abs diff <= ATOL)."""

from collections.abc import Iterable

import torch

ATOL = 1e-5


def at_real_tokens(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level outputs at real tokens only: padding positions hold throw-away values in
    transformers and exact zeros on our padding-free path (the default). ``mask`` is (B, T) or
    (B, C, T) (multiple choice); other outputs are returned whole."""
    for m in (mask.bool(), mask.reshape(-1, mask.shape[-1]).bool()):
        if x.dim() >= m.dim() and tuple(x.shape[: m.dim()]) == tuple(m.shape):
            return x[m]
    return x


def assert_same_outputs(expected, got, mask: torch.Tensor, keys: Iterable[str] | None = None, at_least: int = 2) -> int:
    """Compare every tensor output both have (token-level ones at real tokens, tuples element by
    element); assert at least ``at_least`` outputs were compared and return how many."""
    compared = 0
    for key in keys or expected.keys():
        if expected.get(key) is None or got.get(key) is None:
            continue
        pairs = zip(expected[key], got[key]) if isinstance(expected[key], tuple) else [(expected[key], got[key])]
        for x, y in pairs:
            torch.testing.assert_close(at_real_tokens(y, mask), at_real_tokens(x, mask), atol=ATOL, rtol=0, msg=key)
        compared += 1
    assert compared >= at_least, f"only {compared} outputs compared"
    return compared


def grads_as_model(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` whose weights are its gradients, so the key map converts gradient names too."""
    clone = type(model)(model.config)
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), clone.named_parameters()):
            q.copy_(p.grad if p.grad is not None else torch.zeros_like(p))
    return clone


def assert_same_seq2seq_attentions(expected, got, source_mask: torch.Tensor) -> None:
    """Encoder, decoder and cross-attention probabilities, layer by layer: (B, h, T, S) each; the
    encoder's at real query rows (rows of padding queries are unspecified)."""
    real_rows = source_mask.bool()
    for name in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
        theirs, ours = getattr(expected, name), getattr(got, name)
        assert ours is not None and len(ours) == len(theirs), name
        for a, b in zip(theirs, ours):
            assert a.shape == b.shape, name
            if name == "encoder_attentions":
                a, b = a.transpose(1, 2)[real_rows], b.transpose(1, 2)[real_rows]
            assert (a - b).abs().max().item() <= ATOL, name
