"""XLNet's ``padding_free``: left-padded batches run in length buckets, each cut to its own longest
row. At real tokens it equals transformers' padded XLNet (outputs, classification logits, losses
and every parameter gradient); padding positions are zeros; anything it cannot run exactly
(right padding, memory, permutation masks, per-layer outputs) runs padded."""

import pytest
import torch
import transformers

import hf_variants
from hf_variants.conversion import WEIGHTS

ATOL = 1e-5
TINY = dict(vocab_size=99, d_model=32, n_layer=2, n_head=4, d_inner=37, mem_len=5, pad_token_id=5, num_labels=3)
# Lengths spread so that bucket_rows makes several buckets, and one row long enough to set T.
LENGTHS = [12, 3, 4, 11, 7, 3, 12, 5]


def left_padded(lengths=LENGTHS, seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.randint(6, TINY["vocab_size"], (len(lengths), width), generator=g)
    mask = (torch.arange(width)[None, :] >= width - torch.tensor(lengths)[:, None]).long()
    segments = torch.randint(0, 2, ids.shape, generator=g)
    return {"input_ids": ids.masked_fill(mask == 0, 5), "attention_mask": mask, "token_type_ids": segments}


def pair(head: str, implementation: str, **overrides):
    torch.manual_seed(0)
    theirs = getattr(transformers, f"XLNet{head}")(transformers.XLNetConfig(**{**TINY, **overrides}))
    ours = hf_variants.from_transformers(theirs)
    ours.config._attn_implementation = implementation
    ours.config.padding_free = True
    return theirs, ours


def spy_on_layer_lengths(backbone) -> list[int]:
    """Records the sequence length each call of the backbone's first layer sees."""
    seen = []
    backbone.layers[0].register_forward_hook(lambda module, args, out: seen.append(args[0].shape[1]))
    return seen


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_bare_model_equals_transformers_at_real_tokens_and_zero_at_padding(implementation):
    theirs, ours = pair("Model", implementation)
    inputs = left_padded()
    seen = spy_on_layer_lengths(ours)
    with torch.no_grad():
        expected = theirs.eval()(**inputs, use_mems=False).last_hidden_state
        got = ours.eval()(**inputs, use_mems=False).last_hidden_state
    real = inputs["attention_mask"].bool()
    torch.testing.assert_close(got[real], expected[real], atol=ATOL, rtol=0)
    assert (got[~real] == 0).all()
    assert len(seen) > 1 and max(seen) == max(LENGTHS) and min(seen) < max(LENGTHS)  # buckets, each cut short


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_sequence_classification_training_step_equals_transformers(implementation):
    theirs, ours = pair("ForSequenceClassification", implementation, dropout=0.0, summary_last_dropout=0.0)
    inputs = {**left_padded(), "labels": torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])}
    seen = spy_on_layer_lengths(ours.transformer)
    expected, got = theirs.train()(**inputs), ours.train()(**inputs)
    assert len(seen) > 1  # the bucketed path ran
    torch.testing.assert_close(got.logits, expected.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(got.loss, expected.loss, atol=ATOL, rtol=0)
    expected.loss.backward()
    got.loss.backward()
    ours_grads = dict(ours.named_parameters())
    theirs_grads = {name: p.grad for name, p in theirs.named_parameters() if p.grad is not None}
    # transformers' gradients under our names, by the variant's key map (the one conversion uses).
    renamed = WEIGHTS["hfv_xlnet"].adapter("ForSequenceClassification").to_ours(theirs_grads)
    assert renamed
    for name, grad in renamed.items():
        torch.testing.assert_close(ours_grads[name].grad, grad, atol=ATOL, rtol=0, msg=name)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_summary_heads_run_the_last_layer_on_the_summary_token_only(implementation):
    """The classifier reads <cls> (the last position of a left-padded row) alone: on the speed
    path each bucket's last layer computes that one position (the states before it enter as keys
    and values only), with transformers' logits; the plain path computes every position."""
    theirs, ours = pair("ForSequenceClassification", implementation)
    inputs = left_padded()
    first_layer = spy_on_layer_lengths(ours.transformer)
    last_layer = []
    ours.transformer.layers[-1].register_forward_hook(lambda module, args, out: last_layer.append(args[0].shape[1]))
    with torch.no_grad():
        expected = theirs.eval()(**inputs, use_mems=False).logits
        got = ours.eval()(**inputs, use_mems=False).logits
        ours.config.padding_free = False
        plain = ours(**inputs, use_mems=False).logits
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(plain, expected, atol=ATOL, rtol=0)
    buckets = len(first_layer) - 1  # the last call is the plain path's
    assert buckets > 1 and last_layer[:buckets] == [1] * buckets  # one query position per bucket
    assert last_layer[buckets:] == first_layer[buckets:] == [max(LENGTHS)]


@pytest.mark.parametrize(
    "inputs",
    [
        pytest.param(
            lambda: {**left_padded(), "attention_mask": left_padded()["attention_mask"].flip(1)}, id="right-padding"
        ),
        pytest.param(lambda: {**left_padded(), "use_mems": True}, id="mems-out"),
        pytest.param(lambda: {**left_padded(), "output_hidden_states": True}, id="hidden-states"),
        pytest.param(lambda: {**left_padded([6] * 8)}, id="no-padding"),
    ],
)
def test_what_cannot_be_bucketed_runs_padded(inputs):
    _, ours = pair("Model", "sdpa")
    seen = spy_on_layer_lengths(ours)
    batch = inputs()
    with torch.no_grad():
        ours.eval()(**batch)
    assert seen == [batch["input_ids"].shape[1]]


def test_on_by_default_and_traced_graphs_take_the_padded_path():
    """padding_free is the default (as for the other encoders); under torch.compile(fullgraph) and
    torch.export the bucket decision (which reads the mask) is skipped and the padded path runs:
    the same logits as the eager buckets."""
    _, ours = pair("ForSequenceClassification", "sdpa")
    assert hf_variants.XLNetConfig().padding_free
    ours.eval()
    inputs = left_padded()
    with torch.no_grad():
        eager = ours(**inputs).logits
        compiled = torch.compile(ours, fullgraph=True, backend="eager")(**inputs).logits
        exported = torch.export.export(ours, args=(), kwargs=inputs).module()(**inputs).logits
    torch._dynamo.reset()
    assert (compiled - eager).abs().max().item() <= ATOL
    assert (exported - eager).abs().max().item() <= ATOL


@pytest.mark.parametrize("padding_free", [True, False])
def test_dropout_is_torch_s_on_the_plain_path_and_the_cpu_kernel_on_the_speed_path(padding_free):
    """The one random-stream difference between the paths: the speed path draws dropout masks with
    modules/dropout.py's CPU kernel (its results unchanged by the move to XLNet's own file), the
    plain path with torch's F.dropout; eval mode is the identity on both."""
    from torch.nn import functional as F

    from hf_variants.models.xlnet.modeling_xlnet import XLNetDropout
    from hf_variants.modules.dropout import dropout as cpu_dropout

    config = hf_variants.XLNetConfig(padding_free=padding_free)
    layer = XLNetDropout(0.3, config).train()
    inputs = torch.randn(4, 16, 8)
    torch.manual_seed(7)
    got = layer(inputs)
    torch.manual_seed(7)
    expected = cpu_dropout(inputs, 0.3, True) if padding_free else F.dropout(inputs, 0.3, True)
    torch.testing.assert_close(got, expected, atol=0, rtol=0)
    torch.manual_seed(7)
    other = F.dropout(inputs, 0.3, True) if padding_free else cpu_dropout(inputs, 0.3, True)
    assert not torch.equal(got, other)  # the two kernels draw different masks for one seed
    assert torch.equal(layer.eval()(inputs), inputs)
