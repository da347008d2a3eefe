"""ALBERT configuration (Lan et al. 2020, "ALBERT: A Lite BERT for Self-supervised Learning of
Language Representations"). Field names and defaults follow transformers' AlbertConfig
(ALBERT-xxlarge v2), so its configs and habits carry over."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig


@strict
class AlbertConfig(VariantConfig):
    """Defaults are ALBERT-xxlarge (v2), as in transformers; see ``modeling_configs/albert-*`` for
    the paper's other sizes. Every shared field is declared in :class:`TransformerConfig`.

    Depth and sharing. ``layer_sharing`` (the paper's ablation, Table 4): ``"all"`` (ALBERT's
    default), ``"attention"`` (one attention block, per-layer FFNs), ``"ffn"`` (one FFN,
    per-layer attention) or ``"none"`` (BERT-like). With ``"all"``, transformers' grouping applies:
    ``num_hidden_groups`` groups of ``inner_group_num`` distinct layers; the encoder applies a
    whole group ``num_hidden_layers`` times, application i using group
    ``int(i / (num_hidden_layers / num_hidden_groups))`` (consecutive applications share a
    group), so the depth is ``num_hidden_layers * inner_group_num``. The other modes need one group
    of one layer (the default), and their depth is ``num_hidden_layers``.

    Embeddings are factorized: a V x E table projected to H (E <= H). The projection exists even
    when E = H, as in transformers (the original TF code drops it then).
    """

    model_type = "hfv_albert"

    vocab_size: int = 30000  # SentencePiece vocabulary of the released models
    embedding_size: int | None = 128  # E, the factorized embedding width (the paper's choice for every size)
    hidden_size: int = 4096  # H (xxlarge)
    num_hidden_layers: int = 12  # applications of a layer group (xxlarge: 12)
    num_attention_heads: int = 64  # A (xxlarge: 64 heads of 64)
    intermediate_size: int = 16384  # FFN width, 4H
    hidden_act: str = "gelu_new"  # tanh-approximated GELU, as the original TF code
    hidden_dropout_prob: float = 0.0  # v2 models remove dropout (paper sec. 4.9)
    attention_probs_dropout_prob: float = 0.0  # likewise
    classifier_dropout: float | None = (
        0.1  # before the SOP and fine-tuning heads (transformers: classifier_dropout_prob)
    )
    layer_sharing: str = "all"  # cross-layer sharing: all | attention | ffn | none
    num_hidden_groups: int = 1  # groups of layers with separate weights ("all" sharing)
    inner_group_num: int = 1  # distinct layers inside a group, applied in sequence
    bos_token_id: int | None = 2  # [CLS] in ALBERT's SentencePiece vocabulary
    eos_token_id: int | None = 3  # [SEP]

    def check_architecture(self) -> None:
        super().check_architecture()
        embedding_size = self.embedding_size or self.hidden_size
        if embedding_size > self.hidden_size:
            raise ValueError(
                f"embedding_size ({embedding_size}) must not exceed hidden_size ({self.hidden_size}): ALBERT factorizes "
                "the embedding through a smaller E"
            )
        for name in ("num_hidden_groups", "inner_group_num"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ValueError(
                f"num_hidden_groups ({self.num_hidden_groups}) exceeds num_hidden_layers ({self.num_hidden_layers}): "
                "some groups would never be applied"
            )
        if self.layer_sharing != "all" and (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise ValueError(
                f"num_hidden_groups / inner_group_num group shared layers: they need layer_sharing='all', got "
                f"{self.layer_sharing!r} with num_hidden_groups={self.num_hidden_groups}, "
                f"inner_group_num={self.inner_group_num}"
            )

    @property
    def depth(self) -> int:
        """Layers applied per forward pass."""
        return self.num_hidden_layers * (self.inner_group_num if self.layer_sharing == "all" else 1)

    def layer_schedule(self) -> list[int] | None:
        """For "all" sharing, the stored layer applied at each depth (group g's inner layer j is
        stored at g * inner_group_num + j); None for the other modes."""
        if self.layer_sharing != "all":
            return None
        span = self.num_hidden_layers / self.num_hidden_groups  # transformers' float arithmetic, kept for parity
        return [
            int(application / span) * self.inner_group_num + inner
            for application in range(self.num_hidden_layers)
            for inner in range(self.inner_group_num)
        ]
