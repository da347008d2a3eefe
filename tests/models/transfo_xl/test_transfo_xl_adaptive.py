"""Transformer-XL's adaptive input and projected adaptive softmax (``adaptive.py``) against a
direct computation over the clustered vocabulary: p(w) = p_head(w) for the shortlist,
p_head(cluster k) · p_k(w) in tail cluster k; the loss is the mean of -log p(next token). Also:
the input/softmax tying, save/load through the Auto classes, and the config checks."""

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoModelForCausalLM

from hf_variants import TransfoXLConfig, TransfoXLLMHeadModel

VOCAB, CUTOFFS = 99, [20, 50, 80]


def tiny(**overrides) -> TransfoXLConfig:
    fields = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        head_dim=8,
        intermediate_size=37,
        mem_len=5,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        clamp_len=-1,
        cutoffs=CUTOFFS,
    )
    return TransfoXLConfig(**{**fields, **overrides})


def direct_probabilities(head, hidden: torch.Tensor) -> torch.Tensor:
    """(N, H) -> (N, V) probabilities, token by token from the clustered definition."""
    starts = [0, *CUTOFFS]
    ends = [*CUTOFFS, VOCAB]

    def project(k):
        return hidden @ head.projections[k] if len(head.projections) else hidden

    def cluster_scores(k):
        if head.div_val == 1:
            layer = head.cluster_layers[0]
            return project(k) @ layer.weight[starts[k] : ends[k]].T + layer.bias[starts[k] : ends[k]]
        return project(k) @ head.cluster_layers[k].weight.T + head.cluster_layers[k].bias

    head_scores = torch.cat([cluster_scores(0), project(0) @ head.cluster_weight.T + head.cluster_bias], dim=-1)
    head_probs = head_scores.softmax(-1)
    columns = []
    for word in range(VOCAB):
        cluster = sum(word >= c for c in CUTOFFS)
        if cluster == 0:
            columns.append(head_probs[:, word])
        else:
            in_cluster = cluster_scores(cluster).softmax(-1)[:, word - starts[cluster]]
            columns.append(head_probs[:, CUTOFFS[0] + cluster - 1] * in_cluster)
    return torch.stack(columns, dim=-1)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(div_val=1),  # WT103 base: one table, no projections, clustered softmax
        dict(div_val=2, embedding_size=16),  # WT103 large's kind: narrower tails, projections
        dict(div_val=1, embedding_size=24, tie_projections=False),  # one projected table, own softmax projections
    ],
)
def test_loss_and_log_probs_equal_the_direct_clustered_computation(overrides):
    torch.manual_seed(0)
    model = TransfoXLLMHeadModel(tiny(**overrides)).eval()
    for parameter in model.lm_head.parameters():  # away from init, so every term matters
        torch.nn.init.normal_(parameter, std=0.3)
    ids = torch.randint(0, VOCAB, (3, 9))
    ids[0, :4] = torch.tensor([3, 30, 60, 95])  # every cluster is a target
    with torch.no_grad():
        hidden = model.transformer(ids).last_hidden_state
        probabilities = direct_probabilities(model.lm_head, hidden.reshape(-1, 32)).reshape(3, 9, VOCAB)
        log_probs = model(ids).logits
        loss = model(ids, labels=ids).loss
    torch.testing.assert_close(probabilities.sum(-1), torch.ones(3, 9), atol=1e-5, rtol=0)
    torch.testing.assert_close(log_probs, probabilities.log(), atol=1e-5, rtol=0)
    expected = -probabilities[:, :-1].gather(-1, ids[:, 1:, None]).log().mean()
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=0)
    labels = ids.clone()
    labels[:, 5:] = -100  # ignored targets leave the mean
    with torch.no_grad():
        partial = model(ids, labels=labels).loss
    torch.testing.assert_close(
        partial, -probabilities[:, :4].gather(-1, ids[:, 1:5, None]).log().mean(), atol=1e-5, rtol=0
    )


def test_adaptive_input_embeds_each_cluster_through_its_table_and_projection():
    torch.manual_seed(0)
    model = TransfoXLLMHeadModel(tiny(div_val=2, embedding_size=16))
    embeddings = model.transformer.word_embeddings
    ids = torch.tensor([[0, 19, 20, 49, 50, 79, 80, 98]])
    starts = [0, 0, 20, 20, 50, 50, 80, 80]
    clusters = [0, 0, 1, 1, 2, 2, 3, 3]
    expected = torch.stack(
        [
            embeddings.tables[k].weight[i - s] @ embeddings.projections[k].T
            for i, s, k in zip(ids[0].tolist(), starts, clusters)
        ]
    )
    torch.testing.assert_close(embeddings(ids)[0], expected, atol=1e-6, rtol=0)
    assert [t.weight.shape[1] for t in embeddings.tables] == [16, 8, 4, 2]


def test_softmax_shares_tables_and_tail_projections_with_the_input_and_trains():
    torch.manual_seed(0)
    model = TransfoXLLMHeadModel(tiny(div_val=2, embedding_size=16))
    embeddings, head = model.transformer.word_embeddings, model.lm_head
    assert all(head.cluster_layers[k].weight is embeddings.tables[k].weight for k in range(4))
    assert all(head.projections[k] is embeddings.projections[k] for k in (1, 2, 3))
    assert head.projections[0] is not embeddings.projections[0]  # the head's projection is its own
    ids = torch.randint(0, VOCAB, (4, 12))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 1.0


def test_save_and_load_through_the_auto_classes_keeps_outputs_and_tying(tmp_path):
    torch.manual_seed(0)
    model = TransfoXLLMHeadModel(tiny(div_val=2, embedding_size=16)).eval()
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    ids = torch.randint(0, VOCAB, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model(ids).logits, atol=0, rtol=0)
    assert loaded.lm_head.projections[2] is loaded.transformer.word_embeddings.projections[2]


@pytest.mark.parametrize(
    "overrides,message",
    [
        (dict(cutoffs=[50, 20]), "cutoffs must be increasing"),
        (dict(cutoffs=[20, 99]), "cutoffs must be increasing"),
        (dict(cutoffs=None, div_val=2), "needs cutoffs"),
        (dict(div_val=0), "div_val must be >= 1"),
        (dict(div_val=8, embedding_size=16), "no width"),
    ],
)
def test_invalid_adaptive_settings_raise_when_the_model_is_built(overrides, message):
    with pytest.raises(ValueError, match=message):
        TransfoXLLMHeadModel(tiny(**overrides))


def test_clustered_loss_skips_the_full_vocabulary_logits():
    model = TransfoXLLMHeadModel(tiny()).eval()
    ids = torch.randint(0, VOCAB, (2, 6))
    out = model(ids, labels=ids)
    assert out.logits is None and out.loss is not None
    assert F.softmax(model(ids).logits, -1).shape == (2, 6, VOCAB)
