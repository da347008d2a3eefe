"""ViT (Dosovitskiy et al. 2021): an image cut into P x P patches, each linearly embedded (a strided
convolution), a learned [CLS] token in front, learned positions, and the shared pre-LN Transformer
encoder. Classification reads the final-norm [CLS] state; ``ViTForMaskedImageModeling`` is
transformers' SimMIM-style head (Xie et al. 2022). MAE pretraining is in ``mae.py``.

What is ViT's own lives here: the patch embeddings (with transformers' bicubic interpolation of the
position table for other image sizes) and the image heads. The encoder, the pooler and the layout
planning are ``hf_variants.modules``: the embeddings declare ``main_input_name = "pixel_values"``
and the bare model hands their (B, 1 + N, H) sequence to ``TransformerBackbone.forward_embedded``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import initialization as init
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    ImageClassifierOutput,
    MaskedImageModelingOutput,
)

from ...modules.backbone import TransformerBackbone
from ...modules.dropout import Dropout
from ...modules.encoder import LayerSpec, LayerStack
from ...modules.heads import sequence_classification_loss
from ...modules.padding import gather_positions
from ...modules.task_models import EncoderTaskModel
from ..modeling_base import VariantPreTrainedModel
from .configuration_vit import ViTConfig


# ----------------------------------------------------------------------------- embeddings
class ViTPatchEmbeddings(nn.Module):
    """(B, C, height, width) pixels -> (B, N, H) patch embeddings, N = (height/P) * (width/P) in
    raster order. A convolution with kernel = stride = P is the paper's linear map E applied to each
    flattened patch (eq. 1), computed without copying the patches out."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.num_channels = config.num_channels
        self.patch_size = config.patch_size
        self.projection = nn.Conv2d(
            config.num_channels, config.hidden_size, kernel_size=config.patch_size, stride=config.patch_size
        )

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.projection(pixel_values).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    """[CLS] + patch embeddings + learned positions (-> dropout): z_0 of the paper's eq. 1.

    With ``use_mask_token`` the patches flagged by ``bool_masked_pos`` are replaced by a learned
    mask token first (SimMIM). Images of another size than ``config.image_size`` need
    ``interpolate_pos_encoding=True``: the patch part of the position table is resized bicubically
    to the new patch grid, exactly as transformers' ViTEmbeddings does.
    """

    main_input_name = "pixel_values"

    def __init__(self, config: ViTConfig, use_mask_token: bool = False) -> None:
        super().__init__()
        self.image_size = config.image_size
        self.patch_size = config.patch_size
        self.num_channels = config.num_channels
        self.cls_token = nn.Parameter(torch.randn(1, 1, config.hidden_size))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, config.hidden_size)) if use_mask_token else None
        self.patch_embeddings = ViTPatchEmbeddings(config)
        self.position_embeddings = nn.Parameter(torch.randn(1, config.num_patches + 1, config.hidden_size))
        self.dropout = Dropout(config.hidden_dropout_prob)

    def check_inputs(self, pixel_values: torch.Tensor, interpolate_pos_encoding: bool) -> None:
        """ValueErrors naming the problem, for pixels the model cannot embed."""
        if not isinstance(pixel_values, torch.Tensor) or pixel_values.dim() != 4:
            shape = tuple(pixel_values.shape) if isinstance(pixel_values, torch.Tensor) else type(pixel_values).__name__
            raise ValueError(f"pixel_values must be a (batch, channels, height, width) tensor, got {shape}")
        _, channels, height, width = pixel_values.shape
        if channels != self.num_channels:
            hint = ""
            if self.num_channels == 1 and channels == 3:
                hint = (
                    "; pipeline() converts PIL images to RGB: give a grayscale model (height, width, 1) "
                    "uint8 arrays, or use the image processor directly on mode 'L' images"
                )
            raise ValueError(
                f"pixel_values have {channels} channels, but the model was configured for "
                f"num_channels={self.num_channels}{hint}"
            )
        if height < self.patch_size or width < self.patch_size:
            raise ValueError(f"image {height}x{width} is smaller than one {self.patch_size}x{self.patch_size} patch")
        if not interpolate_pos_encoding and (height != self.image_size or width != self.image_size):
            raise ValueError(
                f"Input image size ({height}*{width}) doesn't match model ({self.image_size}*{self.image_size}); "
                "resize the image or pass interpolate_pos_encoding=True"
            )

    def interpolate_pos_encoding(self, embeddings: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """The (1, 1 + n, H) position table for ``embeddings`` (B, 1 + n, H) of a height x width image.

        The [CLS] row is kept; the patch rows, a sqrt(N) x sqrt(N) grid, are resized bicubically to
        (height // P, width // P). The stored table is returned as is when the grid already fits
        (same patch count, square image), as transformers does (so results match it bit for bit).
        """
        num_patches = embeddings.shape[1] - 1
        num_positions = self.position_embeddings.shape[1] - 1
        if not torch.jit.is_tracing() and num_patches == num_positions and height == width:
            return self.position_embeddings
        dim = embeddings.shape[-1]
        side = int(math.sqrt(num_positions))
        grid = self.position_embeddings[:, 1:].reshape(1, side, side, dim).permute(0, 3, 1, 2)
        grid = nn.functional.interpolate(
            grid, size=(height // self.patch_size, width // self.patch_size), mode="bicubic", align_corners=False
        )
        patch_positions = grid.permute(0, 2, 3, 1).reshape(1, -1, dim)
        return torch.cat((self.position_embeddings[:, :1], patch_positions), dim=1)

    def mask_patches(self, patches: torch.Tensor, bool_masked_pos: torch.Tensor) -> torch.Tensor:
        """Replace the patches flagged in ``bool_masked_pos`` (B, N) by the mask token. (B, N, H) -> (B, N, H)."""
        if self.mask_token is None:
            raise ValueError(
                "bool_masked_pos needs a mask token: build the model with use_mask_token=True "
                "(ViTForMaskedImageModeling does)"
            )
        if tuple(bool_masked_pos.shape) != tuple(patches.shape[:2]):
            raise ValueError(
                f"bool_masked_pos has shape {tuple(bool_masked_pos.shape)}, expected (batch, num_patches) = "
                f"{tuple(patches.shape[:2])}"
            )
        mask = bool_masked_pos.unsqueeze(-1).type_as(patches)
        return patches * (1.0 - mask) + self.mask_token.expand_as(patches) * mask

    def forward(
        self,
        pixel_values: torch.Tensor,
        bool_masked_pos: torch.Tensor | None = None,
        interpolate_pos_encoding: bool = False,
        visible_patches: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """pixels (B, C, height, width) -> (B, 1 + N, H): [CLS] then the patches, positions added.
        ``visible_patches`` (B, n) patch indices (MAE's random masking): only those patches, in
        that order, follow [CLS] -> (B, 1 + n, H). Every parameter is read here, in this forward,
        where accelerate's offload hooks load them."""
        self.check_inputs(pixel_values, interpolate_pos_encoding)
        batch, _, height, width = pixel_values.shape
        patches = self.patch_embeddings(pixel_values)
        if bool_masked_pos is not None:
            patches = self.mask_patches(patches, bool_masked_pos)
        embeddings = torch.cat((self.cls_token.expand(batch, -1, -1), patches), dim=1)
        if interpolate_pos_encoding:
            embeddings = embeddings + self.interpolate_pos_encoding(embeddings, height, width)
        else:
            embeddings = embeddings + self.position_embeddings
        if visible_patches is not None:
            embeddings = torch.cat((embeddings[:, :1], gather_positions(embeddings[:, 1:], visible_patches)), dim=1)
        return self.dropout(embeddings)


# ----------------------------------------------------------------------------- models
class ViTPreTrainedModel(VariantPreTrainedModel):
    config_class = ViTConfig
    base_model_prefix = "vit"
    main_input_name = "pixel_values"
    input_modalities = ("image",)
    # Beside the layers, the modules holding parameters of their own next to their children (the
    # [CLS] token and position table; MAE's mask token and decoder positions) stay whole, as in
    # transformers' ViT / ViTMAE: split, their own parameters would miss accelerate's offload hooks.
    _no_split_modules = ["ViTEmbeddings", "TransformerLayer", "MAEDecoder"]
    # SimMIM's mask token exists only with use_mask_token: a checkpoint of the model without it
    # (a plain ViTModel, an image classifier) loads, the token initialised and reported missing.
    _initialised_when_missing = (r"(^|\.)embeddings\.mask_token$",)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        std = self.config.initializer_range
        if isinstance(module, ViTEmbeddings):
            init.trunc_normal_(module.position_embeddings, mean=0.0, std=std)
            init.trunc_normal_(module.cls_token, mean=0.0, std=std)
            if module.mask_token is not None:
                init.zeros_(module.mask_token)


class ViTModel(TransformerBackbone, ViTPreTrainedModel):
    """The bare ViT encoder. ``last_hidden_state`` (B, 1 + N, H) is after the final LayerNorm;
    ``pooler_output`` (with ``add_pooling_layer``, the default, as transformers' ViTModel) is
    tanh(W h_[CLS]). ``use_mask_token`` adds SimMIM's mask token (``bool_masked_pos``)."""

    def __init__(self, config: ViTConfig, add_pooling_layer: bool = True, use_mask_token: bool = False) -> None:
        self._use_mask_token = use_mask_token  # read by build_embeddings during the backbone's __init__
        super().__init__(config, add_pooling_layer=add_pooling_layer)

    def build_embeddings(self, config: ViTConfig) -> ViTEmbeddings:
        return ViTEmbeddings(config, use_mask_token=self._use_mask_token)

    def build_layers(self, config: ViTConfig) -> LayerStack:
        # transformers' ViT reports the last layer's output before the final norm in hidden_states.
        return LayerStack(
            LayerSpec.from_config(config),
            config.num_hidden_layers,
            sharing=config.layer_sharing,
            final_norm_in_hidden_states=False,
        )

    def get_input_embeddings(self) -> ViTPatchEmbeddings:
        return self.embeddings.patch_embeddings

    def set_input_embeddings(self, value: ViTPatchEmbeddings) -> None:
        self.embeddings.patch_embeddings = value

    def forward(
        self,
        pixel_values: torch.Tensor | None = None,
        bool_masked_pos: torch.Tensor | None = None,
        interpolate_pos_encoding: bool | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        summary_only: bool = False,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode images.

        Args:
            pixel_values: (B, C, height, width), e.g. from ViTImageProcessor.
            bool_masked_pos: (B, N) True where a patch is replaced by the mask token (needs ``use_mask_token``).
            interpolate_pos_encoding: resize the position table to this image size (see ViTEmbeddings).
            attention_mask: (B, 1 + N) 1 for tokens to attend to, or None (every token).
            summary_only: the caller reads only [CLS]: the last layer computes it alone and
                last_hidden_state is (B, 1, H). Ignored when hidden states or attentions are asked for.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, 1 + N, H), pooler_output (B, H) or None,
            hidden_states (layers + 1 of (B, 1 + N, H), the last before the final norm) and
            attentions (layers of (B, heads, 1 + N, 1 + N)) if asked.
        """
        if pixel_values is None:
            raise ValueError("pixel_values are required (a (batch, channels, height, width) tensor)")
        if isinstance(pixel_values, torch.Tensor):
            pixel_values = pixel_values.to(self.embeddings.patch_embeddings.projection.weight.dtype)
        embeddings = self.embeddings(pixel_values, bool_masked_pos, bool(interpolate_pos_encoding))
        return self.forward_embedded(
            embeddings, attention_mask, output_attentions, output_hidden_states, return_dict, summary_only=summary_only
        )


class ViTModelLoadedWithOwnKeyMap(ViTModel):
    """ViTModel under another name, used by ``ViTModel.from_pretrained`` only (which hands back a
    ViTModel). transformers looks a checkpoint conversion up by class name before model_type, and
    its own "ViTModel" has one (transformers 4 -> 5 renames) that would replace our key map; under
    this name it applies the map registered for "hfv_vit". See conversion.loading.class_for_loading."""


ViTModel.loading_class = ViTModelLoadedWithOwnKeyMap


class ViTForImageClassification(EncoderTaskModel, ViTPreTrainedModel):
    """A linear classifier on the final-norm [CLS] state (transformers' head; no pooler). The last
    layer computes [CLS] alone unless hidden states or attentions are asked for (same logits)."""

    backbone_class = ViTModel
    uses_pooler = False

    def __init__(self, config: ViTConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self._build_backbone(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels) if config.num_labels > 0 else nn.Identity()
        self.post_init()

    def forward(
        self,
        pixel_values: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        interpolate_pos_encoding: bool | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> ImageClassifierOutput | tuple:
        """labels: (B,) class ids, (B,) floats when num_labels == 1 (regression), or (B, num_labels)
        multi-hot. Logits (B, num_labels)."""
        out = self.vit(
            pixel_values,
            interpolate_pos_encoding=interpolate_pos_encoding,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            summary_only=True,
        )
        logits = self.classifier(out.last_hidden_state[:, 0])
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return self._finish(
            ImageClassifierOutput,
            return_dict,
            loss=loss,
            logits=logits,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )


def masked_patch_l1_loss(
    pixel_values: torch.Tensor, reconstruction: torch.Tensor, bool_masked_pos: torch.Tensor, patch_size: int
) -> torch.Tensor:
    """SimMIM's loss: mean absolute error over the pixels of the masked patches, per channel.

    pixel_values, reconstruction (B, C, height, width); bool_masked_pos (B, N) over the
    (height/P) x (width/P) patch grid in raster order. Same formula as transformers
    (sum |x - x_hat| over masked pixels / (number of masked pixel positions + 1e-5) / C).
    """
    batch, channels, height, width = pixel_values.shape
    grid = bool_masked_pos.reshape(batch, height // patch_size, width // patch_size)
    pixel_mask = grid.repeat_interleave(patch_size, 1).repeat_interleave(patch_size, 2).unsqueeze(1)
    errors = nn.functional.l1_loss(pixel_values, reconstruction, reduction="none")
    return (errors * pixel_mask).sum() / (pixel_mask.sum() + 1e-5) / channels


class ViTForMaskedImageModeling(EncoderTaskModel, ViTPreTrainedModel):
    """SimMIM-style masked image modelling (transformers' ViTForMaskedImageModeling): masked patches
    become the mask token, and a 1x1 convolution + pixel shuffle maps each patch state back to its
    P x P pixels; L1 loss on the masked patches. ``encoder_stride`` must equal ``patch_size`` to
    compute the loss."""

    backbone_class = ViTModel

    def __init__(self, config: ViTConfig) -> None:
        super().__init__(config)
        self.vit = ViTModel(config, add_pooling_layer=False, use_mask_token=True)
        self.decoder = nn.Sequential(
            nn.Conv2d(config.hidden_size, config.encoder_stride**2 * config.num_channels, kernel_size=1),
            nn.PixelShuffle(config.encoder_stride),
        )
        self.post_init()

    def forward(
        self,
        pixel_values: torch.Tensor | None = None,
        bool_masked_pos: torch.Tensor | None = None,
        interpolate_pos_encoding: bool | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> MaskedImageModelingOutput | tuple:
        """bool_masked_pos: (B, N) True at masked patches (gives the loss). Reconstruction
        (B, C, grid_h * encoder_stride, grid_w * encoder_stride)."""
        config = self.config
        if bool_masked_pos is not None and config.patch_size != config.encoder_stride:
            raise ValueError(
                f"bool_masked_pos needs patch_size == encoder_stride so the reconstruction has the input's size; "
                f"got patch_size={config.patch_size}, encoder_stride={config.encoder_stride}"
            )
        out = self.vit(
            pixel_values,
            bool_masked_pos=bool_masked_pos,
            interpolate_pos_encoding=interpolate_pos_encoding,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        patches = out.last_hidden_state[:, 1:]
        batch, _, hidden = patches.shape
        grid_height, grid_width = (
            pixel_values.shape[-2] // config.patch_size,
            pixel_values.shape[-1] // config.patch_size,
        )
        feature_map = patches.transpose(1, 2).reshape(batch, hidden, grid_height, grid_width)
        reconstruction = self.decoder(feature_map)
        loss = None
        if bool_masked_pos is not None:
            loss = masked_patch_l1_loss(
                pixel_values.to(reconstruction.dtype), reconstruction, bool_masked_pos, config.patch_size
            )
        return self._finish(
            MaskedImageModelingOutput,
            return_dict,
            loss=loss,
            reconstruction=reconstruction,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )


__all__ = [
    "ViTPreTrainedModel",
    "ViTModel",
    "ViTForImageClassification",
    "ViTForMaskedImageModeling",
]
