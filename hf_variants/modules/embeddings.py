"""Input embeddings: token + position (learned or sinusoidal) + segment, LayerNorm, dropout,
and an optional factorized E -> H projection (ALBERT)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .dropout import Dropout
from .inputs import check_index_range, check_token_id

POSITION_EMBEDDING_TYPES = ("learned", "sinusoidal", "none")


SINUSOIDAL_LAYOUTS = ("interleaved", "concatenated")


def sinusoidal_table(num_positions: int, dim: int, layout: str = "interleaved") -> torch.Tensor:
    """The fixed encoding of "Attention Is All You Need" (sec. 3.5): (num_positions, dim) with
    wavelengths 2pi .. 10000*2pi. ``layout`` "interleaved" (the paper's formula): sin on even and
    cos on odd dimensions; "concatenated": all sines then all cosines (tensor2tensor, fairseq,
    Marian). Angles are computed in float64 (as Marian's numpy table), then cast to float32."""
    if layout not in SINUSOIDAL_LAYOUTS:
        raise ValueError(f"sinusoidal layout must be one of {SINUSOIDAL_LAYOUTS}, got {layout!r}")
    position = torch.arange(num_positions, dtype=torch.float64)[:, None]
    frequency = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
    sines, cosines = torch.sin(position * frequency), torch.cos(position * frequency[: dim // 2])
    if layout == "concatenated":
        return torch.cat([sines, cosines], dim=1).float()
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = sines
    table[:, 1::2] = cosines
    return table.float()


class TransformerEmbeddings(nn.Module):
    """word + position + segment embeddings -> LayerNorm -> dropout (-> Linear E->H).

    Every input may be (B, T) or the padding-free packed (total_tokens,) layout; the output has
    the same leading shape with a trailing H.

    Args:
        vocab_size: V.
        embedding_size: E, the width of the embedding tables (E = H unless factorized).
        hidden_size: H; when different from E a projection E -> H follows (ALBERT).
        max_position_embeddings: the longest sequence the model accepts.
        type_vocab_size: number of segments (0 disables segment embeddings).
        position_embedding_type: "learned", "sinusoidal" (fixed) or "none" (relative-position models).
        layer_norm: apply LayerNorm to the summed embeddings (False for pre-LN GPT-style stacks).
        pad_token_id: padding index of the word table.
        sinusoidal_layout: "interleaved" or "concatenated" sin/cos (see :func:`sinusoidal_table`).
        project: whether the E -> H projection exists; None: only when E != H (transformers'
            ALBERT keeps it even when E = H, so its checkpoints need True).
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        max_position_embeddings: int,
        type_vocab_size: int,
        position_embedding_type: str = "learned",
        layer_norm_eps: float = 1e-12,
        dropout: float = 0.1,
        pad_token_id: int | None = 0,
        layer_norm: bool = True,
        sinusoidal_layout: str = "interleaved",
        project: bool | None = None,
    ) -> None:
        super().__init__()
        if position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(
                f"position_embedding_type must be one of {POSITION_EMBEDDING_TYPES}, got {position_embedding_type!r}"
            )
        self.vocab_size = vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.position_embedding_type = position_embedding_type
        self.sinusoidal_layout = sinusoidal_layout
        # The padding row is looked up at build: a pad id outside the table is refused by name here
        # (torch's own check is an AssertionError), as transformers' BERT refuses it.
        check_token_id("pad_token_id", pad_token_id, vocab_size, "it is the padding row of the word embeddings")
        self.word_embeddings = nn.Embedding(vocab_size, embedding_size, padding_idx=pad_token_id)
        if position_embedding_type == "learned":
            self.position_embeddings = nn.Embedding(max_position_embeddings, embedding_size)
        elif position_embedding_type == "sinusoidal":
            # Not a parameter and not saved: it is a function of the config.
            self.register_buffer(
                "sinusoidal_positions",
                sinusoidal_table(max_position_embeddings, embedding_size, sinusoidal_layout),
                persistent=False,
            )
        self.token_type_embeddings = nn.Embedding(type_vocab_size, embedding_size) if type_vocab_size > 0 else None
        self.layer_norm = nn.LayerNorm(embedding_size, eps=layer_norm_eps) if layer_norm else None
        self.dropout = Dropout(dropout)
        if project is None:
            project = embedding_size != hidden_size
        if not project and embedding_size != hidden_size:
            raise ValueError(f"embedding_size {embedding_size} != hidden_size {hidden_size} needs the projection")
        self.projection = nn.Linear(embedding_size, hidden_size) if project else None

    # The model input this module embeds (the backbone's forward takes token ids; embeddings of
    # another input, e.g. ViT's "pixel_values", are driven through TransformerBackbone.forward_embedded).
    main_input_name: str = "input_ids"
    # Further (B, T) inputs a subclass embeds, passed by name from the backbone's forward (XLM: "langs").
    extra_input_names: tuple[str, ...] = ()

    @staticmethod
    def config_kwargs(config) -> dict:
        """The constructor arguments of a :class:`~hf_variants.modules.configuration.TransformerConfig`
        (subclasses that embed more pass these on to ``super().__init__``)."""
        return dict(
            vocab_size=config.vocab_size,
            embedding_size=config.embedding_size or config.hidden_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            position_embedding_type=config.position_embedding_type,
            layer_norm_eps=config.layer_norm_eps,
            dropout=config.hidden_dropout_prob,
            pad_token_id=config.pad_token_id,
        )

    def default_position_ids(
        self, input_ids: torch.Tensor | None, attention_mask: torch.Tensor | None, batch: int, length: int, device
    ) -> torch.Tensor:
        """(B, T) positions 0..T-1. Variants whose positions depend on the ids (RoBERTa's offset by
        the padding index) override this."""
        return torch.arange(length, device=device).expand(batch, length)

    def reset_fixed_buffers(self) -> None:
        """Recompute the sinusoidal table (after meta-device initialisation in from_pretrained)."""
        if self.position_embedding_type == "sinusoidal":
            table = sinusoidal_table(
                self.max_position_embeddings, self.word_embeddings.embedding_dim, self.sinusoidal_layout
            )
            self.sinusoidal_positions.copy_(table.to(self.sinusoidal_positions.device))

    def check_inputs(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        sequence_length: int,
    ) -> None:
        if input_ids is not None:
            # The live table size, not the constructor's: resize_token_embeddings changes it.
            check_index_range(input_ids, self.word_embeddings.num_embeddings, "input_ids", "vocab_size")
        if self.position_embedding_type != "none" and sequence_length > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {sequence_length} exceeds max_position_embeddings "
                f"({self.max_position_embeddings}); truncate the input or use a config with more positions"
            )
        if position_ids is not None and self.position_embedding_type != "none":
            check_index_range(position_ids, self.max_position_embeddings, "position_ids", "max_position_embeddings")
        if token_type_ids is not None:
            if self.token_type_embeddings is None:
                raise ValueError(
                    "token_type_ids were given but this model has no segment embeddings (type_vocab_size=0)"
                )
            check_index_range(token_type_ids, self.type_vocab_size, "token_type_ids", "type_vocab_size")

    def additional_embeddings(self, token_type_ids: torch.Tensor | None, **extra_inputs) -> torch.Tensor | None:
        """Further embeddings summed with word + segment + position before the LayerNorm, or None.
        Variants that embed more inputs (XLM's language ids, named in ``extra_input_names``) override it."""
        return None

    def forward(
        self,
        input_ids: torch.Tensor | None,
        position_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **extra_inputs,
    ) -> torch.Tensor:
        """ids (B, T) or (N,) -> embeddings (B, T, H) or (N, H). ``extra_inputs``: the tensors named
        by ``extra_input_names``, in the layout of ``input_ids``."""
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(position_ids)
            embeddings = embeddings + self.token_type_embeddings(token_type_ids)
        if self.position_embedding_type == "learned":
            embeddings = embeddings + self.position_embeddings(position_ids)
        elif self.position_embedding_type == "sinusoidal":
            # The table is a buffer that may be kept in float32: added in the embeddings' dtype
            # (a float16 / bfloat16 model would otherwise be promoted back to float32 here).
            embeddings = embeddings + self.sinusoidal_positions[position_ids].to(embeddings.dtype)
        additional = self.additional_embeddings(token_type_ids, **extra_inputs)
        if additional is not None:
            embeddings = embeddings + additional
        if self.layer_norm is not None:
            embeddings = self.layer_norm(embeddings)
        embeddings = self.dropout(embeddings)
        if self.projection is not None:
            embeddings = self.projection(embeddings)
        return embeddings
