"""The configuration fields every shared block reads, declared once.

Each variant's config subclasses :class:`TransformerConfig` (through
``hf_variants/models/configuration_base.py``, which adds reading the family's transformers
config.json), sets its paper's defaults and adds its own fields; the shared blocks and the speed
plug-in (``fast_path.py``) read only the fields declared here, so nothing is looked up by
``getattr`` on an unknown config.
Field names follow transformers' BERT config, so habits carry over; variants whose transformers
counterpart uses other names (``n_embd``, ``d_model``) alias them with ``attribute_map``.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.activations import ACT2FN

from .embeddings import POSITION_EMBEDDING_TYPES
from .masks import SUMMARY_TYPES
from .norms import NORM_TYPES

# Cross-layer parameter sharing (ALBERT, Lan et al. 2020 sec. 3.1): every layer its own weights,
# one layer for all depths, or only the attention / only the FFN shared.
SHARING_MODES = ("none", "all", "attention", "ffn")


@strict
class TransformerConfig(PreTrainedConfig):
    """Shared architecture fields (defaults: BERT-base). See each variant's config for its own."""

    vocab_size: int = 30522  # token vocabulary V
    hidden_size: int = 768  # model width H
    num_hidden_layers: int = 12  # L
    num_attention_heads: int = 12  # A
    head_dim: int | None = None  # per-head width; None -> H / A (T5 sets d_kv)
    intermediate_size: int = 3072  # FFN inner width
    hidden_act: str = "gelu"  # FFN activation, a name in transformers' ACT2FN
    gated_ffn: bool = False  # GLU-style FFN: act(W_gate x) * W_up x (T5 v1.1)
    hidden_dropout_prob: float = 0.1  # dropout on sub-layer outputs and the embeddings
    attention_probs_dropout_prob: float = 0.1  # dropout on attention probabilities
    ffn_dropout_prob: float = 0.0  # dropout between the FFN activation and its down-projection (T5)
    max_position_embeddings: int = 512  # longest sequence the position scheme covers
    position_embedding_type: str = "learned"  # learned | sinusoidal | none (relative schemes add their own)
    type_vocab_size: int = 2  # segment ids (0: no segment embeddings)
    embedding_size: int | None = None  # E of a factorized embedding projected to H (ALBERT/ELECTRA); None -> H
    norm_type: str = "layer_norm"  # layer_norm | rms_norm
    layer_norm_eps: float = 1e-12
    pre_layer_norm: bool = False  # False: post-LN (BERT); True: pre-LN with a final norm (GPT-2, ViT, T5)
    use_bias: bool = True  # biases in the attention and FFN projections (T5: none)
    attention_scale: float | None = None  # score scale; None -> 1/sqrt(head_dim) (T5: 1.0)
    layer_sharing: str = "none"  # cross-layer sharing (ALBERT): none | all | attention | ffn
    is_decoder: bool = False  # causal self-attention
    summary_type: str = "first"  # the token that summarises a sequence: first | last | last_real | mean
    initializer_range: float = 0.02  # std of the normal init
    pad_token_id: int | None = 0
    classifier_dropout: float | None = None  # dropout before task heads; None -> hidden_dropout_prob
    tie_word_embeddings: bool = True  # LM decoder shares the word embedding matrix
    # The speed plug-in's switch: drop padding inside the encoder and compute the last layer only where
    # a head reads; same results at real tokens, faster on CPU (benchmarks/RESULTS.md). Variants on their
    # own modeling file (BERT: modules/fast_path.py) take it on CPU inputs only; False: the plain path.
    padding_free: bool = True
    sparse_prediction: bool = False  # MLM logits only at masked positions when labels are given

    def __post_init__(self, **kwargs):
        if self.position_embedding_type == "absolute":  # transformers' name for learned positions
            self.position_embedding_type = "learned"
        super().__post_init__(**kwargs)

    def check_architecture(self) -> None:
        """Raise ValueError for combinations the model cannot be built with. Called when a model is
        built from the config (VariantPreTrainedModel.__init__), not when the config is made:
        as in transformers, a config may be edited field by field through invalid states (and
        round-trips through dicts); the model it builds may not. A plain ValueError, not a
        strict-dataclass validator, whose errors are not ValueErrors. Variants extend it."""
        # Sizes first: the divisibility test below would divide by a zero head count.
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.head_dim is None and self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads ({self.num_attention_heads})"
            )
        choices = {
            "position_embedding_type": POSITION_EMBEDDING_TYPES,
            "layer_sharing": SHARING_MODES,
            "norm_type": NORM_TYPES,
            "summary_type": SUMMARY_TYPES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("head_dim", "embedding_size"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive or None, got {getattr(self, name)}")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be >= 0, got {self.type_vocab_size}")
        if not self.layer_norm_eps > 0:  # 0 divides by zero on a constant input, < 0 takes sqrt of a negative
            raise ValueError(f"layer_norm_eps must be positive, got {self.layer_norm_eps}")
        if self.hidden_act not in ACT2FN:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not an activation transformers knows (ACT2FN)")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "ffn_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        # Special token ids are checked where they are looked up (modules/token_ids.py), not here:
        # transformers builds a GPT2Config(vocab_size=99) with bos/eos 50256, and so do we.


@strict
class DecoderConfig(TransformerConfig):
    """The fields a generating decoder adds (decoder-only variants: GPT). Read by the variant's
    decoder and by transformers' ``generate()`` (the token ids seed the model's generation_config)."""

    is_decoder: bool = True  # causal self-attention
    use_cache: bool = True  # keep past keys/values (a transformers Cache) between generation steps
    add_cross_attention: bool = False  # layers also attend to an encoder's states (set on an encoder-decoder's decoder)
    # Special ids may lie outside the vocabulary (GPT2Config's 50256 with a small vocab_size): they
    # are refused where generate() or the embeddings would look them up (modules/token_ids.py).
    bos_token_id: int | None = None  # first token of a generated sequence
    eos_token_id: int | None = None  # generation stops at this token


@strict
class EncoderDecoderConfig(DecoderConfig):
    """The fields an encoder-decoder adds (the original Transformer, T5). The top-level config
    describes the encoder; the variant's model derives the decoder's copy (causal, with
    cross-attention, ``decoder_layers`` deep)."""

    is_decoder: bool = False  # the encoder half; the decoder's copy sets it
    is_encoder_decoder: bool = True
    decoder_start_token_id: int | None = None  # first decoder input (generation and shifted labels)
    # Decoder depth (None: as the encoder). transformers' flat encoder-decoder name: generate()
    # sizes its cache from it through get_text_config(decoder=True).
    decoder_layers: int | None = None

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if self.decoder_layers is None:
            self.decoder_layers = self.num_hidden_layers

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.decoder_layers <= 0:
            raise ValueError(f"decoder_layers must be positive, got {self.decoder_layers}")
        if self.embedding_size not in (None, self.hidden_size):  # refused here, not first by the LM head at build
            raise ValueError(
                f"encoder-decoders have no factorized embeddings: the seq2seq LM head is tied to (vocab_size, hidden_size) "
                f"word embeddings; embedding_size={self.embedding_size} != hidden_size={self.hidden_size}"
            )
