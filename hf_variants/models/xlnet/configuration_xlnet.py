"""XLNet configuration (Yang et al. 2019, "XLNet: Generalized Autoregressive Pretraining for
Language Understanding").

Field names are the shared :class:`TransformerConfig`'s; transformers' XLNetConfig names
(``d_model``, ``n_layer``, ``n_head``, ``d_inner``, ``d_head``, ``ff_activation``, ``dropout``,
``n_token``) are aliases of them, so ``config.d_model`` reads as in transformers.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig

ATTENTION_TYPES = ("bi", "uni")  # bidirectional (pretraining/fine-tuning) | causal (Transformer-XL style)


@strict
class XLNetConfig(VariantConfig):
    """Defaults are XLNet-Large (the paper's Table 7 setting, transformers' ``xlnet-large-cased``):
    24 post-LN layers of width 1024, 16 heads, FFN 4096, GELU, one dropout rate for the
    embeddings, sub-layer outputs, relative position encodings and attention probabilities
    (``hidden_dropout_prob``; ``attention_probs_dropout_prob`` is not read: XLNet has one rate).

    No absolute positions and no segment table: positions enter through Transformer-XL's relative
    sinusoids (``clamp_len``, ``bi_data``), segments through XLNet's relative segment encoding
    (whether two tokens share a segment), so ``max_position_embeddings`` and ``type_vocab_size``
    are not used.
    """

    model_type = "hfv_xlnet"
    attribute_map = {
        "n_token": "vocab_size",
        "d_model": "hidden_size",
        "n_layer": "num_hidden_layers",
        "n_head": "num_attention_heads",
        "d_inner": "intermediate_size",
        "d_head": "head_dim",
        "ff_activation": "hidden_act",
        "dropout": "hidden_dropout_prob",
    }

    vocab_size: int = 32000  # SentencePiece vocabulary of the released models
    hidden_size: int = 1024  # d_model: 768 for XLNet-Base, 1024 for XLNet-Large
    num_hidden_layers: int = 24  # n_layer: 12 (Base), 24 (Large)
    num_attention_heads: int = 16  # n_head: 12 (Base), 16 (Large)
    intermediate_size: int = 4096  # d_inner: 4 * d_model
    hidden_act: str = "gelu"  # ff_activation
    type_vocab_size: int = 0  # no segment table: relative segment encoding (seg_embed) instead
    position_embedding_type: str = "none"  # no absolute positions: relative sinusoids inside attention
    attn_type: str = "bi"  # bi: every token sees every other (masks aside); uni: causal
    mem_len: int | None = 512  # memory positions kept for the next segment (None or 0: keep all, as transformers)
    reuse_len: int | None = None  # only the first reuse_len tokens of a segment enter the memory (pretraining)
    use_mems_eval: bool = True  # return mems in eval mode unless use_mems says otherwise
    use_mems_train: bool = False  # return mems in training mode unless use_mems says otherwise
    bi_data: bool = (
        False  # the first half of the batch reads positions forwards, the second half backwards (pretraining)
    )
    clamp_len: int = -1  # relative distances are clamped to [-clamp_len, clamp_len]; -1: no clamping
    same_length: bool = False  # with attn_type="uni": every token sees the same number of keys
    summary_type: str = "last"  # the token sequence-level heads read: XLNet puts <cls> last
    summary_use_proj: bool = True  # project the summary to H before logits_proj
    summary_activation: str | None = "tanh"  # activation after the summary projection
    summary_last_dropout: float = 0.1  # dropout after the summary activation
    start_n_top: int = 5  # beam sizes of transformers' beam-search QA head (kept for config round trips)
    end_n_top: int = 5
    classifier_dropout: float | None = 0.0  # transformers' XLNet token classifier has no dropout
    pad_token_id: int | None = 5  # <pad> of XLNet's SentencePiece vocabulary (<unk>=0, <s>=1, </s>=2)
    bos_token_id: int | None = 1
    eos_token_id: int | None = 2
    padding_free: bool = True  # left-padded plain encodings run in length buckets (exact at real tokens, zeros at padding), as the family's padding-free default

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.attn_type not in ATTENTION_TYPES:
            raise ValueError(f"attn_type must be one of {ATTENTION_TYPES}, got {self.attn_type!r}")
        if self.summary_type not in ("first", "last", "mean"):
            raise ValueError(f"summary_type must be first, last or mean for XLNet, got {self.summary_type!r}")
        if self.hidden_size % 2:
            raise ValueError(f"hidden_size must be even (sinusoidal relative encodings), got {self.hidden_size}")
        if self.mem_len is not None and self.mem_len < 0:
            raise ValueError(f"mem_len must be >= 0 or None, got {self.mem_len}")
        for name in ("start_n_top", "end_n_top"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 (a beam size), got {getattr(self, name)}")
        if self.reuse_len is not None and self.reuse_len < 0:
            raise ValueError(f"reuse_len must be >= 0 or None, got {self.reuse_len}")
        if self.embedding_size not in (None, self.hidden_size):
            raise ValueError("XLNet has no factorized embedding: embedding_size must be None")
        if self.position_embedding_type != "none":
            raise ValueError("XLNet's positions are relative: position_embedding_type must be 'none'")
        if not 0.0 <= self.summary_last_dropout < 1.0:
            raise ValueError(f"summary_last_dropout must be in [0, 1), got {self.summary_last_dropout}")
