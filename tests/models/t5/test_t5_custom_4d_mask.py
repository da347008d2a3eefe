"""Issue 43 (transformers' ``test_custom_4d_attention_mask`` on T5: ``ValueError: attention_mask has
shape (1, 1, 6, 6), expected (1, 6) like input_ids``): T5 takes a 4-D (batch, 1, query, key) mask
and uses it as given, as transformers' T5 does: the encoder's ``attention_mask``, the decoder's
``decoder_attention_mask`` (causality included). Against transformers' T5 on the same weights
(fp32, 1e-5), and the property such masks exist for: documents packed in one row, each masked to
itself, give the outputs of the documents run separately (T5's relative position bias depends on
key - query offsets only, so it is the same inside each block)."""

from __future__ import annotations

import pytest
import torch
import transformers

import hf_variants
from hf_variants.models.t5 import T5Config

TOL = dict(rtol=1e-5, atol=1e-5)
THEIR_CONFIG = dict(
    vocab_size=99,
    d_model=32,
    d_kv=8,
    d_ff=37,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    relative_attention_num_buckets=8,
    relative_attention_max_distance=20,
    dropout_rate=0.0,
    decoder_start_token_id=0,
    feed_forward_proj="relu",
    tie_word_embeddings=True,
)
MIN = torch.finfo(torch.float32).min


def models(head: str, backend: str = "eager"):
    """transformers' T5<head> with random weights and ours converted from it."""
    torch.manual_seed(0)
    config = transformers.T5Config(**THEIR_CONFIG)
    config._attn_implementation = backend
    theirs = getattr(transformers, f"T5{head}")(config).eval()
    ours = hf_variants.from_transformers(theirs).eval()
    if backend != "eager":
        ours.set_attn_implementation(backend)
    return ours, theirs


def block_keep_mask(lengths: list[int], causal: bool) -> torch.Tensor:
    """(1, 1, N, N) bool: each of the packed documents of ``lengths`` sees only itself (causally)."""
    total = sum(lengths)
    keep = torch.zeros(total, total, dtype=torch.bool)
    start = 0
    for length in lengths:
        block = torch.ones(length, length, dtype=torch.bool)
        keep[start : start + length, start : start + length] = block.tril() if causal else block
        start += length
    return keep[None, None]


def additive(keep: torch.Tensor) -> torch.Tensor:
    """transformers' form of a custom 4-D mask: 0 where visible, the dtype's minimum where hidden."""
    return (~keep).float() * MIN


def shared_prefix_mask() -> torch.Tensor:
    """The mask of transformers' ``_get_custom_4d_mask_test_data``: a 3-token prefix and three
    one-token continuations that do not see each other."""
    rows = [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 0, 1, 0],
        [1, 1, 1, 0, 0, 1],
    ]
    return torch.tensor(rows, dtype=torch.bool)[None, None]


IDS = torch.randint(2, 99, (1, 9), generator=torch.Generator().manual_seed(1))
DOCUMENTS = [4, 5]


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
def test_decoder_4d_mask_matches_transformers(backend):
    """transformers' T5 test: a shared-prefix decoder mask (float, additive), on the same weights."""
    ours, theirs = models("ForConditionalGeneration", backend)
    decoder_ids = torch.tensor([[10, 11, 12, 13, 14, 15]])
    inputs = dict(input_ids=IDS, decoder_input_ids=decoder_ids, decoder_attention_mask=additive(shared_prefix_mask()))
    with torch.no_grad():
        mine, reference = ours(**inputs), theirs(**inputs)
    torch.testing.assert_close(mine.logits, reference.logits, **TOL)
    # A bool keep-mask is the same mask.
    with torch.no_grad():
        as_bool = ours(**{**inputs, "decoder_attention_mask": shared_prefix_mask()})
    torch.testing.assert_close(as_bool.logits, mine.logits, **TOL)


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
def test_encoder_4d_mask_matches_transformers(backend):
    ours, theirs = models("EncoderModel", backend)
    mask = additive(block_keep_mask(DOCUMENTS, causal=False))
    with torch.no_grad():
        mine, reference = ours(IDS, attention_mask=mask), theirs(IDS, attention_mask=mask)
    torch.testing.assert_close(mine.last_hidden_state, reference.last_hidden_state, **TOL)


def test_packed_encoder_documents_equal_the_documents_alone():
    ours, _ = models("EncoderModel")
    with torch.no_grad():
        packed = ours(IDS, attention_mask=block_keep_mask(DOCUMENTS, causal=False)).last_hidden_state
        first, second = ours(IDS[:, :4]).last_hidden_state, ours(IDS[:, 4:]).last_hidden_state
    torch.testing.assert_close(packed, torch.cat([first, second], dim=1), **TOL)


def test_packed_decoder_documents_equal_the_documents_alone():
    """Two target documents packed in one decoder row with a per-document causal mask, reading the
    same source: each document's logits are those it gets alone."""
    ours, _ = models("ForConditionalGeneration")
    targets = torch.randint(2, 99, (1, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        packed = ours(
            input_ids=IDS, decoder_input_ids=targets, decoder_attention_mask=block_keep_mask(DOCUMENTS, causal=True)
        ).logits
        first = ours(input_ids=IDS, decoder_input_ids=targets[:, :4]).logits
        second = ours(input_ids=IDS, decoder_input_ids=targets[:, 4:]).logits
    torch.testing.assert_close(packed, torch.cat([first, second], dim=1), **TOL)


def test_4d_mask_is_used_as_given():
    """No causal mask is added to a 4-D decoder mask (transformers uses it as it stands): a mask
    that shows the decoder every target token gives other logits than the causal one."""
    ours, theirs = models("ForConditionalGeneration")
    decoder_ids = torch.randint(2, 99, (1, 5), generator=torch.Generator().manual_seed(3))
    everything = torch.ones(1, 1, 5, 5, dtype=torch.bool)
    with torch.no_grad():
        mine = ours(input_ids=IDS, decoder_input_ids=decoder_ids, decoder_attention_mask=everything).logits
        reference = theirs(
            input_ids=IDS, decoder_input_ids=decoder_ids, decoder_attention_mask=additive(everything)
        ).logits
        causal = ours(input_ids=IDS, decoder_input_ids=decoder_ids).logits
    torch.testing.assert_close(mine, reference, **TOL)
    assert not torch.allclose(mine, causal, atol=1e-3)


def test_bad_4d_masks_raise_value_errors():
    ours, _ = models("ForConditionalGeneration")
    encoder = ours.get_encoder()
    decoder_ids = torch.tensor([[10, 11, 12, 13, 14, 15]])
    with pytest.raises(ValueError, match=r"a 4-D mask must be \(batch, 1, query_length, key_length\) = \(1, 1, 6, 6\)"):
        ours(
            input_ids=IDS,
            decoder_input_ids=decoder_ids,
            decoder_attention_mask=torch.ones(1, 1, 6, 5, dtype=torch.bool),
        )
    with pytest.raises(ValueError, match="a float 4-D attention_mask is additive"):  # a keep-mask given as floats
        ours(input_ids=IDS, decoder_input_ids=decoder_ids, decoder_attention_mask=shared_prefix_mask().float())
    with pytest.raises(ValueError, match="attention_mask must hold only 0"):
        encoder(IDS, attention_mask=torch.full((1, 1, 9, 9), 2))
    with pytest.raises(
        ValueError, match=r"an encoder-decoder's attention_mask is the \(batch, source_length\) keep-mask"
    ):
        ours(input_ids=IDS, attention_mask=block_keep_mask(DOCUMENTS, causal=False), decoder_input_ids=decoder_ids)
    # Other shapes are still refused as before, and variants without 4-D masks refuse them.
    with pytest.raises(ValueError, match=r"attention_mask has shape \(1, 8\), expected \(1, 9\) like input_ids"):
        encoder(IDS, attention_mask=torch.ones(1, 8, dtype=torch.long))
    gpt = hf_variants.GPTModel(
        hf_variants.GPTConfig(
            vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37
        )
    )
    with pytest.raises(ValueError, match=r"attention_mask has shape \(1, 1, 9, 9\), expected \(1, 9\)"):
        gpt(IDS, attention_mask=torch.ones(1, 1, 9, 9, dtype=torch.bool))


def test_4d_encoder_mask_through_encoder_outputs():
    """The route the error message gives: the encoder alone with the 4-D mask, then the model with
    encoder_outputs and the (B, S) mask for cross-attention."""
    ours, _ = models("ForConditionalGeneration")
    decoder_ids = torch.tensor([[10, 11, 12]])
    with torch.no_grad():
        encoded = ours.get_encoder()(IDS, attention_mask=block_keep_mask(DOCUMENTS, causal=False))
        logits = ours(
            encoder_outputs=encoded, attention_mask=torch.ones_like(IDS), decoder_input_ids=decoder_ids
        ).logits
    assert logits.shape == (1, 3, THEIR_CONFIG["vocab_size"]) and torch.isfinite(logits).all()
    assert isinstance(ours.config, T5Config)
