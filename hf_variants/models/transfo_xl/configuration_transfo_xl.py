"""Transformer-XL configuration (Dai et al. 2019, "Transformer-XL: Attentive Language Models
Beyond a Fixed-Length Context").

Field names are the shared :class:`TransformerConfig`'s; the original code's names (``d_model``,
``n_layer``, ``n_head``, ``d_head``, ``d_inner``, ``dropout``, ``dropatt``, ``n_token``,
``d_embed``) are aliases of them.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig


@strict
class TransfoXLConfig(VariantConfig):
    """Defaults are the paper's WikiText-103 large model (18 layers, d_model 1024, 16 heads of 64,
    FFN 4096, dropout 0.2, attention dropout 0.2, mem_len 384, clamp_len 1000) with a plain tied
    softmax; the paper's adaptive input and softmax (``cutoffs`` 20k/40k/200k, ``div_val`` 4 for
    the large model, 1 for the base one) are set by the named configs ``transfo-xl-base`` /
    ``transfo-xl-large`` (``adaptive.py``). Post-LN blocks with ReLU FFNs, no absolute positions
    (relative sinusoids inside attention), per-layer ``r_w``/``r_r`` biases (the released models'
    ``untie_r``), embeddings scaled by sqrt(d_model)."""

    model_type = "hfv_transfo_xl"
    attribute_map = {
        "n_token": "vocab_size",
        "d_model": "hidden_size",
        "n_layer": "num_hidden_layers",
        "n_head": "num_attention_heads",
        "d_head": "head_dim",
        "d_inner": "intermediate_size",
        "dropout": "hidden_dropout_prob",
        "dropatt": "attention_probs_dropout_prob",
        "d_embed": "embedding_size",
    }

    vocab_size: int = 267735  # WikiText-103 word vocabulary
    hidden_size: int = 1024  # d_model: 410 (WT103 base), 1024 (WT103 large)
    num_hidden_layers: int = 18  # n_layer: 16 (base), 18 (large)
    num_attention_heads: int = 16  # n_head: 10 (base), 16 (large)
    head_dim: int | None = 64  # d_head: 41 (base), 64 (large)
    intermediate_size: int = 4096  # d_inner: 2100 (base), 4096 (large)
    hidden_act: str = "relu"  # the original FFN: Linear -> ReLU -> dropout -> Linear -> dropout
    hidden_dropout_prob: float = 0.2  # dropout: 0.1 (base), 0.2 (large)
    attention_probs_dropout_prob: float = 0.2  # dropatt: 0.0 (base), 0.2 (large)
    layer_norm_eps: float = 1e-5  # PyTorch's LayerNorm default, as the original code
    type_vocab_size: int = 0  # no segment embeddings
    position_embedding_type: str = "none"  # relative sinusoids inside attention
    is_decoder: bool = True  # causal language model
    mem_len: int = 384  # memory positions kept for the next segment (0: no memory); evaluation may use more
    clamp_len: int = 1000  # relative distances beyond clamp_len use clamp_len's encoding (-1: none)
    use_mems: bool = True  # return mems by default
    same_length: bool = False  # every query sees the same number of keys (the original evaluation; mask the oldest)
    padding_free: bool = False  # relative attention over memory runs in the padded layout
    pad_token_id: int | None = None  # the word vocabulary has no padding token
    tie_word_embeddings: bool = True  # the softmax shares the input embedding (tie_weight)
    cutoffs: list[int] | None = (
        None  # adaptive softmax cluster boundaries (WT103: [20000, 40000, 200000]); None: full softmax
    )
    div_val: int = 1  # adaptive input: cluster k embeds at width embedding_size // div_val**k (WT103 large: 4)
    tie_projections: bool = (
        True  # tail clusters' softmax projections shared with the input's (proj_share_all_but_first)
    )

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.type_vocab_size != 0:  # the model builds no segment table; refused here, not ignored
            raise ValueError(
                f"Transformer-XL has no segment embeddings: type_vocab_size must be 0, got {self.type_vocab_size}"
            )
        if self.mem_len < 0:
            raise ValueError(f"mem_len must be >= 0, got {self.mem_len}")
        if self.hidden_size % 2:
            raise ValueError(f"hidden_size must be even (sinusoidal relative encodings), got {self.hidden_size}")
        if self.pre_layer_norm:
            raise ValueError("pre_layer_norm is not provided for Transformer-XL (the paper's models are post-LN)")
        if not self.is_decoder:
            raise ValueError("Transformer-XL is a causal language model: is_decoder must be True")
        if self.position_embedding_type != "none":
            raise ValueError("Transformer-XL's positions are relative: position_embedding_type must be 'none'")
        cutoffs = list(self.cutoffs or [])
        if (
            any(not isinstance(c, int) for c in cutoffs)
            or cutoffs != sorted(set(cutoffs))
            or (cutoffs and not 0 < cutoffs[0] <= cutoffs[-1] < self.vocab_size)
        ):
            raise ValueError(
                f"cutoffs must be increasing token ids strictly between 0 and vocab_size "
                f"({self.vocab_size}), got {self.cutoffs}"
            )
        if self.div_val < 1:
            raise ValueError(f"div_val must be >= 1, got {self.div_val}")
        width = self.embedding_size or self.hidden_size
        if self.div_val > 1 and not cutoffs:
            raise ValueError("div_val > 1 shrinks the tail clusters' embeddings: it needs cutoffs")
        if width // self.div_val ** len(cutoffs) < 1:
            raise ValueError(f"embedding_size {width} // div_val**{len(cutoffs)} leaves the last cluster no width")

    @property
    def adaptive_input(self) -> bool:
        """Whether the input embedding is ``adaptive.AdaptiveEmbedding`` (narrower clusters or a
        projection); otherwise one (vocab, hidden) table, as the WT103 base model."""
        return self.div_val > 1 or self.embedding_size not in (None, self.hidden_size)

    @property
    def adaptive_softmax(self) -> bool:
        """Whether the LM head is ``adaptive.AdaptiveSoftmax`` (clusters or a projection)."""
        return bool(self.cutoffs) or self.adaptive_input
