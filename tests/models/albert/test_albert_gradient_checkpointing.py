"""Regression found by transformers' own common tests (issue 31): ALBERT's summary-only heads
(sequence classification, multiple choice) under gradient checkpointing.

ALBERT runs one shared layer at every depth, and a head that reads only the summary token computes
the last depth at that position alone. transformers' checkpointing hands the checkpoint
``partial(forward, **keywords)`` per call; with the per-depth values (the positions to compute,
the layout, the depth) as keywords, the one shared layer got a different function at each depth,
and transformers' test, which replays every recomputation through the function of the latest call,
recomputed the first depth as the summary-only last one ("Index tensor must have the same number
of dimensions as input tensor"). They now go positionally: every call passes the same function.
"""

from __future__ import annotations

import pytest
import torch

from hf_variants import AlbertConfig, AlbertForMultipleChoice, AlbertForSequenceClassification

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    embedding_size=16,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def inputs_for(cls) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    shape = (3, 2, 7) if cls is AlbertForMultipleChoice else (3, 7)
    ids = torch.randint(3, 99, shape, generator=generator)
    mask = torch.ones_like(ids)
    mask[1, ..., -2:] = 0  # a right-padded row: the summary-only path gathers per-row positions
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([0, 1, 1])}


def gradients(cls, checkpointing: dict | None, replay_latest: bool = False) -> dict[str, torch.Tensor]:
    """Parameter gradients after one backward. ``replay_latest``: every checkpointed call of the
    shared layer recomputes through the function handed to the checkpoint by the latest call, as
    transformers' ``check_training_gradient_checkpointing`` does with its mock."""
    torch.manual_seed(0)
    model = cls(AlbertConfig(**TINY)).train()
    if checkpointing is not None:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=checkpointing)
    if replay_latest:
        layer = model.albert.encoder.layer_at(0)
        assert all(model.albert.encoder.layer_at(d) is layer for d in range(TINY["num_hidden_layers"]))
        checkpoint, latest = layer._gradient_checkpointing_func, []

        def replay(forward, *args):
            latest[:] = [forward]
            return checkpoint(lambda *a: latest[0](*a), *args)

        layer._gradient_checkpointing_func = replay
    model(**inputs_for(cls)).loss.backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("cls", [AlbertForSequenceClassification, AlbertForMultipleChoice])
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_summary_heads_checkpointed_gradients_equal_plain_ones(cls, use_reentrant):
    plain = gradients(cls, None)
    for replay_latest in (False, True):
        checkpointed = gradients(cls, {"use_reentrant": use_reentrant}, replay_latest=replay_latest)
        assert checkpointed.keys() == plain.keys()
        for name in plain:
            torch.testing.assert_close(checkpointed[name], plain[name], msg=f"{name} (replay_latest={replay_latest})")


def test_every_depth_hands_the_checkpoint_the_same_function():
    """The keywords of ``partial(forward, ...)`` are the same at every depth of the shared layer."""
    model = AlbertForSequenceClassification(AlbertConfig(**TINY)).train()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    layer = model.albert.encoder.layer_at(0)
    checkpoint, keywords = layer._gradient_checkpointing_func, []

    def record(forward, *args):
        keywords.append(forward.keywords)
        return checkpoint(forward, *args)

    layer._gradient_checkpointing_func = record
    model(**inputs_for(AlbertForSequenceClassification))
    assert len(keywords) == TINY["num_hidden_layers"]
    assert all(k == keywords[0] for k in keywords), keywords
