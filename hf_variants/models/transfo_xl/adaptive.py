"""Transformer-XL's adaptive input embeddings and projected adaptive softmax, as its WikiText-103
models use them (Baevski & Auli 2019, "Adaptive Input Representations"; Grave et al. 2017,
"Efficient softmax approximation for GPUs").

The vocabulary is sorted by frequency and cut at ``cutoffs`` into clusters: cluster 0 (the
shortlist, the most frequent words) and tail clusters 1..C. Cluster k works at width
``embedding_size // div_val**k`` and is projected to / from ``hidden_size`` (no projection where
``div_val == 1`` and ``embedding_size == hidden_size``: the WT103 base model).

The softmax (the loss definition of the paper's code): a head softmax over the shortlist tokens
plus one logit per tail cluster; then a softmax inside each tail cluster. For a word w,

    log p(w) = log p_head(w)                              if w is in the shortlist,
    log p(w) = log p_head(cluster k) + log p_k(w)         if w is in tail cluster k.

Tail cluster k's head logit is row k - 1 of ``cluster_weight`` / ``cluster_bias`` (head column
``shortlist + k - 1``, the order of the released checkpoints). Input and output share the cluster
tables (``tie_word_embeddings``) and, with ``tie_projections``, the tail clusters' projections
(the head's stays its own: the original ``proj_share_all_but_first``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

IGNORE_INDEX = -100


def cluster_bounds(vocab_size: int, cutoffs: list[int] | None) -> list[tuple[int, int]]:
    """[(start, end)] token-id ranges of the clusters: [0, c1), [c1, c2), ..., [cC, vocab_size)."""
    edges = [0, *(cutoffs or []), vocab_size]
    return list(zip(edges[:-1], edges[1:]))


def cluster_widths(embedding_size: int, div_val: int, clusters: int) -> list[int]:
    """Embedding width of each cluster: embedding_size // div_val**k (all equal when div_val == 1)."""
    return [embedding_size // div_val**k for k in range(clusters)]


class Projections(nn.ParameterList):
    """The (hidden_size, width_k) projections of one side: a class of its own so that
    ``_init_weights`` finds them (transformers initialises module by module, and a module holding
    no tensor of its own, like ``AdaptiveEmbedding``, is skipped for remote code)."""


class AdaptiveEmbedding(nn.Module):
    """Token ids (...,) -> (..., hidden_size), unscaled (the model multiplies by sqrt(hidden_size)).

    Parameters: ``tables.k`` (cluster size, width_k) (one (vocab, embedding_size) table when
    ``div_val == 1``) and ``projections.k`` (hidden_size, width_k) (one when ``div_val == 1``),
    applied as ``table_k[id - start_k] @ projections.k^T``.
    """

    def __init__(
        self, vocab_size: int, hidden_size: int, embedding_size: int, cutoffs: list[int] | None, div_val: int
    ) -> None:
        super().__init__()
        self.bounds = cluster_bounds(vocab_size, cutoffs) if div_val > 1 else [(0, vocab_size)]
        widths = cluster_widths(embedding_size, div_val, len(self.bounds))
        self.tables = nn.ModuleList(
            nn.Embedding(end - start, width) for (start, end), width in zip(self.bounds, widths)
        )
        self.projections = Projections(nn.Parameter(torch.empty(hidden_size, width)) for width in widths)
        self.hidden_size = hidden_size

    @property
    def num_embeddings(self) -> int:
        return self.bounds[-1][1]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        flat = input_ids.reshape(-1)
        projection = self.projections[0]
        embedded = flat.new_zeros((flat.numel(), self.hidden_size), dtype=projection.dtype)
        for (start, end), table, projection in zip(self.bounds, self.tables, self.projections):
            rows = torch.nonzero((flat >= start) & (flat < end)).squeeze(1)
            embedded[rows] = F.linear(table(flat[rows] - start), projection)
        return embedded.reshape(*input_ids.shape, self.hidden_size)


class AdaptiveSoftmax(nn.Module):
    """The projected adaptive softmax (see the module docstring).

    Parameters: ``cluster_layers.k`` Linear(width_k -> cluster size) (one Linear(embedding_size ->
    vocab) sliced per cluster when ``div_val == 1``); ``projections.k`` (hidden_size, width_k)
    applied as ``h @ projections.k``, absent when ``div_val == 1`` and embedding_size ==
    hidden_size; ``cluster_weight`` (C, width_0) and ``cluster_bias`` (C,) for the tail clusters'
    head logits.
    """

    def __init__(
        self, vocab_size: int, hidden_size: int, embedding_size: int, cutoffs: list[int] | None, div_val: int
    ) -> None:
        super().__init__()
        self.bounds = cluster_bounds(vocab_size, cutoffs)
        self.div_val = div_val
        widths = cluster_widths(embedding_size, div_val, len(self.bounds))
        if div_val == 1:
            self.cluster_layers = nn.ModuleList([nn.Linear(embedding_size, vocab_size)])
        else:
            self.cluster_layers = nn.ModuleList(
                nn.Linear(width, end - start) for (start, end), width in zip(self.bounds, widths)
            )
        projected = div_val > 1 or embedding_size != hidden_size
        self.projections = Projections(
            nn.Parameter(torch.empty(hidden_size, width)) for width in (widths if projected else [])
        )
        tails = len(self.bounds) - 1
        if tails:
            self.cluster_weight = nn.Parameter(torch.zeros(tails, widths[0]))
            self.cluster_bias = nn.Parameter(torch.zeros(tails))

    @property
    def shortlist_size(self) -> int:
        return self.bounds[0][1]

    def cluster_logits(self, hidden: torch.Tensor, cluster: int) -> torch.Tensor:
        """(N, hidden_size) -> (N, cluster size) logits inside ``cluster``; for cluster 0 (the head),
        (N, shortlist + C): the shortlist tokens, then one logit per tail cluster."""
        start, end = self.bounds[cluster]
        if self.div_val == 1:
            layer = self.cluster_layers[0]
            weight, bias = layer.weight[start:end], layer.bias[start:end]
        else:
            weight, bias = self.cluster_layers[cluster].weight, self.cluster_layers[cluster].bias
        if cluster == 0 and len(self.bounds) > 1:
            weight = torch.cat([weight, self.cluster_weight])
            bias = torch.cat([bias, self.cluster_bias])
        if len(self.projections):
            hidden = hidden @ self.projections[cluster]
        return F.linear(hidden, weight, bias)

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., hidden_size) -> (..., vocab) log-probabilities of every token (sums to 1 over the
        vocabulary: usable as logits by generation and argmax)."""
        flat = hidden.reshape(-1, hidden.shape[-1])
        head = F.log_softmax(self.cluster_logits(flat, 0), dim=-1)
        pieces = [head[:, : self.shortlist_size]]
        for cluster in range(1, len(self.bounds)):
            in_cluster = F.log_softmax(self.cluster_logits(flat, cluster), dim=-1)
            pieces.append(head[:, self.shortlist_size + cluster - 1, None] + in_cluster)
        return torch.cat(pieces, dim=-1).reshape(*hidden.shape[:-1], -1)

    def negative_log_likelihood(self, hidden: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """hidden (N, hidden_size), labels (N,) -> (N,) -log p(label), 0 where the label is -100.
        Each tail cluster's softmax runs only on the rows whose label falls in it."""
        head = F.log_softmax(self.cluster_logits(hidden, 0), dim=-1)
        losses = hidden.new_zeros(labels.shape)
        for cluster, (start, end) in enumerate(self.bounds):
            rows = torch.nonzero((labels >= start) & (labels < end)).squeeze(1)
            if cluster == 0:
                losses[rows] = -head[rows, labels[rows]]
                continue
            in_cluster = F.log_softmax(self.cluster_logits(hidden[rows], cluster), dim=-1)
            word = in_cluster.gather(1, (labels[rows] - start)[:, None]).squeeze(1)
            losses[rows] = -(head[rows, self.shortlist_size + cluster - 1] + word)
        return losses
