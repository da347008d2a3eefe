"""GPT configuration: GPT-2 (Radford et al. 2019, the defaults) and GPT-1 (Radford et al. 2018) as
field values of one config. Field names are the shared ones (``hidden_size``, not ``n_embd``);
``hf_variants.models.gpt.weights`` translates transformers' GPT2Config / OpenAIGPTConfig."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantDecoderConfig


@strict
class GPTConfig(VariantDecoderConfig):
    """Defaults are GPT-2 small (124M). GPT-1 is ``pre_layer_norm=False`` (post-LN, no final
    LayerNorm), ``hidden_act="gelu_new"`` too (the tanh GELU, which transformers' OpenAIGPTConfig calls "gelu"), 512 positions, a 40,478-token BPE vocabulary and no scaled
    residual init (``modeling_configs/openai-gpt``).

    ``head_dim`` is always ``hidden_size // num_attention_heads`` (transformers' GPT2Attention and
    OpenAI GPT's Attention derive it; the fused (H, 3H) projection of their checkpoints leaves no
    other width): read, it is an int, never None, and it follows ``hidden_size`` /
    ``num_attention_heads`` when they are edited after construction (``update_from_string``,
    ``from_pretrained(..., hidden_size=...)``); written, config.json holds that value. Given
    explicitly, any other value is kept as given and refused when a model is built
    (:meth:`check_architecture`).

    Both generations embed tokens and learned positions with no embedding LayerNorm and no segment
    table: ``token_type_ids``, when given, are looked up in the word embeddings (transformers'
    convention; GPT-1's fine-tuning delimiters are ordinary tokens). Sequence classification reads
    each row's last token that is not ``pad_token_id`` (``summary_type="last_real"``).
    """

    model_type = "hfv_gpt"

    vocab_size: int = 50257  # GPT-2's byte-level BPE (GPT-1: 40,478)
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072  # 4 H
    hidden_act: str = "gelu_new"  # the tanh approximation of GELU (GPT-1 and GPT-2)
    hidden_dropout_prob: float = 0.1  # residual and embedding dropout (transformers' resid_pdrop / embd_pdrop)
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 1024  # GPT-1: 512
    type_vocab_size: int = 0  # no segment table (token_type_ids use the word embeddings)
    layer_norm_eps: float = 1e-5
    pre_layer_norm: bool = True  # GPT-2: LayerNorm before each sub-block + a final LayerNorm; GPT-1: post-LN
    scale_residual_init: bool = True  # GPT-2: residual projections initialised with std / sqrt(2 L)
    summary_type: str = "last_real"  # sequence classification reads the last non-padding token
    pad_token_id: int | None = None  # GPT-2 has no padding token (fine-tuning usually sets it to eos)
    bos_token_id: int | None = 50256  # <|endoftext|>
    eos_token_id: int | None = 50256
    lm_loss_weight: float = 0.5  # GPT-1 fine-tuning: lambda of the auxiliary LM loss (GPTDoubleHeadsModel)
    padding_free: bool = True  # training batches without a cache may run packed (same results at real tokens)

    # ``head_dim`` (a field of the shared config) is derived here. Tools and transformers' own tests
    # read ``config.head_dim`` when a config has the attribute (the cache's per-layer shape is
    # (batch, heads, seq, head_dim)); None there broke them. Only a value that differs from the
    # derived one is stored (``__dict__["head_dim"]``, so strict-dataclass init and ``to_dict`` see
    # the field as usual), which keeps the width following later edits of the two sizes.
    @property
    def head_dim(self) -> int | None:
        explicit = self.__dict__.get("head_dim")
        return explicit if explicit is not None else self.derived_head_dim

    @head_dim.setter
    def head_dim(self, value: int | None) -> None:
        self.__dict__["head_dim"] = None if value == self.derived_head_dim else value

    @property
    def derived_head_dim(self) -> int | None:
        """hidden_size // num_attention_heads (None while num_attention_heads is not positive)."""
        sizes = self.__dict__
        if "hidden_size" not in sizes or sizes.get("num_attention_heads", 0) <= 0:  # during __init__, or invalid
            return None
        return sizes["hidden_size"] // sizes["num_attention_heads"]

    def to_dict(self) -> dict:
        output = super().to_dict()
        output["head_dim"] = self.head_dim  # the width the model has, not the None of "derived"
        return output

    def check_architecture(self) -> None:
        heads, hidden = self.num_attention_heads, self.hidden_size
        if heads > 0 and hidden > 0 and hidden % heads != 0:  # before the shared checks read the derived width
            raise ValueError(f"hidden_size ({hidden}) must be divisible by num_attention_heads ({heads})")
        super().check_architecture()
        if self.head_dim != self.derived_head_dim:
            raise ValueError(
                f"GPT's heads split hidden_size: head_dim must be hidden_size // num_attention_heads = "
                f"{self.derived_head_dim}, got head_dim={self.head_dim} (leave it unset: it is derived)"
            )
        if not self.is_decoder:  # refused here, with the other architecture checks, not first at model build
            raise ValueError("GPT is a causal decoder: is_decoder must be True")
        if self.position_embedding_type != "learned":
            raise ValueError(
                f"GPT's positions are learned; position_embedding_type {self.position_embedding_type!r} is not supported"
            )
        if self.type_vocab_size != 0:
            raise ValueError(
                "GPT has no segment table (token_type_ids are embedded as tokens): type_vocab_size must be 0"
            )
        if self.summary_type != "last_real":
            raise ValueError(
                f'GPT summarises a sequence by its last real token: summary_type must be "last_real", got {self.summary_type!r}'
            )
        if self.embedding_size not in (None, self.hidden_size):
            raise ValueError(f"GPT has no factorized embeddings (embedding_size={self.embedding_size})")
        if self.add_cross_attention:
            raise ValueError("GPT is a decoder-only model: add_cross_attention must be False (no encoder to attend to)")
