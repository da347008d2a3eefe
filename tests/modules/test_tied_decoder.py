"""TiedDecoder (hf_variants.modules.heads): the same outputs and gradients as nn.Linear, and a
weight gradient that autograd can accumulate in place with the word-embedding gradient."""

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from hf_variants.modules.heads import TiedDecoder, _DecoderProjection

VOCAB, WIDTH = 4096, 64


def tied_pair(decoder_class: type) -> tuple[nn.Embedding, nn.Linear]:
    torch.manual_seed(0)
    embedding = nn.Embedding(VOCAB, WIDTH)
    decoder = decoder_class(WIDTH, VOCAB)
    decoder.weight = embedding.weight
    return embedding, decoder


def step(embedding: nn.Embedding, decoder: nn.Linear, ids: torch.Tensor) -> torch.Tensor:
    logits = decoder(torch.tanh(embedding(ids)))
    loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), ids.view(-1))
    loss.backward()
    return logits


def test_same_outputs_and_gradients_as_linear():
    ids = torch.randint(0, VOCAB, (3, 7), generator=torch.Generator().manual_seed(1))
    results = []
    for decoder_class in (nn.Linear, TiedDecoder):
        embedding, decoder = tied_pair(decoder_class)
        logits = step(embedding, decoder, ids)
        results.append((logits.detach(), embedding.weight.grad.clone(), decoder.bias.grad.clone()))
    for reference, ours in zip(*results):
        torch.testing.assert_close(ours, reference, atol=1e-6, rtol=1e-5)
    double = dict(dtype=torch.float64, requires_grad=True)
    inputs = (torch.randn(4, 3, **double), torch.randn(5, 3, **double), torch.randn(5, **double))
    assert torch.autograd.gradcheck(_DecoderProjection.apply, inputs)


def peak_allocated_bytes(decoder_class: type) -> int:
    embedding, decoder = tied_pair(decoder_class)
    ids = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(2))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(embedding, decoder, ids)
    live = peak = 0
    records = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    for event in sorted(records, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def test_tied_gradient_is_accumulated_in_place():
    """With nn.Linear the two V x E gradients are summed into a third buffer; with TiedDecoder the
    embedding's gradient is added into the decoder's, so the peak holds two, not three."""
    table = VOCAB * WIDTH * 4
    linear_peak, tied_peak = peak_allocated_bytes(nn.Linear), peak_allocated_bytes(TiedDecoder)
    assert linear_peak >= 3 * table
    assert tied_peak < 2.5 * table
