"""ViT configuration (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words: Transformers for
Image Recognition at Scale"). Field names follow transformers' ViTConfig (``image_size``,
``patch_size``, ``num_channels``, ``encoder_stride``) so configs and habits carry over; the MAE
fields follow transformers' ViTMAEConfig (He et al. 2022, "Masked Autoencoders Are Scalable
Vision Learners")."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig


@strict
class ViTConfig(VariantConfig):
    """Defaults are ViT-Base/16 at 224x224 (the paper's Table 1; transformers' ViTConfig defaults).

    The encoder is the shared pre-LN stack (``pre_layer_norm=True``: LayerNorm before each
    sub-block, one after the stack), GELU MLPs, learned positions for 1 + (image_size/patch_size)^2
    tokens (a [CLS] token, then the patches in raster order). The text fields of
    :class:`TransformerConfig` do not apply: no vocabulary, segments or padding token.
    ``max_position_embeddings`` is derived (1 + number of patches).
    """

    model_type = "hfv_vit"

    image_size: int = 224  # side of the (square) training images, in pixels
    patch_size: int = 16  # side of a square patch P; the sequence holds (image_size / P)^2 patches + [CLS]
    num_channels: int = 3  # input channels (3 for RGB, 1 for grayscale)
    encoder_stride: int = 16  # SimMIM head (ForMaskedImageModeling): pixel-shuffle upsampling factor (= patch_size)
    hidden_dropout_prob: float = 0.0  # paper: 0.1 only when training from scratch on ImageNet
    attention_probs_dropout_prob: float = 0.0
    pre_layer_norm: bool = True  # ViT's blocks are pre-LN with a final LayerNorm
    layer_norm_eps: float = 1e-12  # transformers' ViT (and its Hub configs); the paper's JAX code uses 1e-6
    summary_type: str = "first"  # the [CLS] token summarises the image
    vocab_size: int = 1  # unused: images have no vocabulary
    type_vocab_size: int = 0  # unused: no segments
    pad_token_id: int | None = None  # unused: every image has the same number of patches
    tie_word_embeddings: bool = False  # no word embeddings to tie
    # MAE pretraining (ViTForPreTraining): the light decoder and the masking (He et al. 2022, sec. 3).
    mask_ratio: float = 0.75  # fraction of patches removed before the encoder
    norm_pix_loss: bool = True  # targets are each patch's pixels normalised by its own mean and std
    decoder_hidden_size: int = 512  # width of the MAE decoder
    decoder_num_hidden_layers: int = 8  # depth of the MAE decoder
    decoder_num_attention_heads: int = 16
    decoder_intermediate_size: int = 2048

    def __post_init__(self, **kwargs):
        if isinstance(self.image_size, int) and isinstance(self.patch_size, int) and self.patch_size > 0:
            # The learned table covers [CLS] + every patch of a training-size image.
            self.max_position_embeddings = 1 + (self.image_size // self.patch_size) ** 2
        super().__post_init__(**kwargs)

    @property
    def num_patches(self) -> int:
        """Patches of a training-size image: (image_size / patch_size)^2."""
        return (self.image_size // self.patch_size) ** 2

    def check_architecture(self) -> None:
        for name in ("image_size", "patch_size"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be an int (square images and patches), got {getattr(self, name)!r}")
        super().check_architecture()
        for name in (
            "image_size",
            "patch_size",
            "num_channels",
            "encoder_stride",
            "decoder_hidden_size",
            "decoder_num_hidden_layers",
            "decoder_num_attention_heads",
            "decoder_intermediate_size",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.image_size % self.patch_size != 0:
            raise ValueError(
                f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size}): "
                "the patches tile the image"
            )
        if not self.pre_layer_norm:
            raise ValueError("ViT's encoder is pre-LN: pre_layer_norm must be True")
        if self.position_embedding_type != "learned":
            raise ValueError(
                f"ViT learns its position embeddings: position_embedding_type must be 'learned', "
                f"got {self.position_embedding_type!r}"
            )
        if self.summary_type != "first":
            raise ValueError(
                f"ViT's summary is the [CLS] token: summary_type must be 'first', got {self.summary_type!r}"
            )
        if self.is_decoder:
            raise ValueError("ViT's encoder attends bidirectionally: is_decoder must be False")
        if not 0.0 < self.mask_ratio < 1.0:
            raise ValueError(f"mask_ratio must be in (0, 1), got {self.mask_ratio}")
        if self.decoder_hidden_size % self.decoder_num_attention_heads != 0:
            raise ValueError(
                f"decoder_hidden_size ({self.decoder_hidden_size}) must be divisible by "
                f"decoder_num_attention_heads ({self.decoder_num_attention_heads})"
            )
