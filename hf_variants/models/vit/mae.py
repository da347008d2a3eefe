"""MAE pretraining for ViT (He et al. 2022, "Masked Autoencoders Are Scalable Vision Learners"),
this variant's own pretraining objective (``ViTForPreTraining``, served by AutoModelForPreTraining).

Per image (sec. 3 of the paper):

1. Embed every patch and add its position; keep a random ``1 - mask_ratio`` of the patches (a
   per-image shuffle by uniform noise, as the paper's code), drop the rest. The encoder, the
   ordinary ViT encoder with its [CLS] token, sees the visible patches only (25% of the tokens at
   the paper's 75% mask ratio: the reason MAE pretraining is cheap).
2. A light decoder (its own width and depth, ViT's own pre-LN ``ViTLayer``) takes the
   encoded visible tokens projected to its width, a shared learned mask token at every removed
   patch, all unshuffled to the original order, plus its own positions, and predicts each patch's
   P * P * C pixel values with a linear layer.
3. The loss is the mean squared error between prediction and target over the masked patches only.
   With ``norm_pix_loss`` (the paper's default, better representations: Table 1d) the target is
   each patch's pixels normalised by that patch's own mean and standard deviation.

Differences from the paper's code, on purpose: the encoder keeps ViT's learned positions (so the
pretrained encoder is a plain ViT checkpoint that ViTForImageClassification loads), and the
decoder's positions are learned too (the code uses fixed 2-D sin-cos tables).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import initialization as init
from transformers.utils import ModelOutput

from ...modules.padding import gather_positions
from .configuration_vit import ViTConfig
from .modeling_vit import ViTBlockShape, ViTEncoder, ViTModel, ViTPreTrainedModel


def patchify(pixel_values: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, height, width) -> (B, N, P * P * C): each patch's pixels, patches in raster order,
    inside a patch row by row with the channels last (the MAE code's layout)."""
    batch, channels, height, width = pixel_values.shape
    rows, cols = height // patch_size, width // patch_size
    patches = pixel_values.reshape(batch, channels, rows, patch_size, cols, patch_size)
    return patches.permute(0, 2, 4, 3, 5, 1).reshape(batch, rows * cols, patch_size * patch_size * channels)


def unpatchify(patches: torch.Tensor, patch_size: int, channels: int, rows: int, cols: int) -> torch.Tensor:
    """The inverse of :func:`patchify`: (B, rows * cols, P * P * C) -> (B, C, rows * P, cols * P)."""
    batch = patches.shape[0]
    grid = patches.reshape(batch, rows, cols, patch_size, patch_size, channels)
    return grid.permute(0, 5, 1, 3, 2, 4).reshape(batch, channels, rows * patch_size, cols * patch_size)


def random_masking(noise: torch.Tensor, mask_ratio: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-image random masking from uniform ``noise`` (B, N): the patches with the smallest noise stay.

    Returns:
        kept (B, n_keep) indices of the visible patches (n_keep = int(N * (1 - mask_ratio))), in
        shuffled order; mask (B, N) 1.0 at removed patches, 0.0 at visible ones (original order);
        ids_restore (B, N): position of each original patch in the shuffled order (unshuffles).
    """
    batch, num_patches = noise.shape
    num_kept = int(num_patches * (1 - mask_ratio))
    if num_kept < 1:
        raise ValueError(f"mask_ratio {mask_ratio} leaves no visible patch out of {num_patches}")
    shuffle = torch.argsort(noise, dim=1)
    ids_restore = torch.argsort(shuffle, dim=1)
    mask = torch.ones(batch, num_patches, dtype=noise.dtype, device=noise.device)
    mask[:, :num_kept] = 0.0
    return shuffle[:, :num_kept], torch.gather(mask, 1, ids_restore), ids_restore


def mae_loss(prediction: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, norm_pix_loss: bool) -> torch.Tensor:
    """Mean over masked patches of the per-patch mean squared error. prediction, target (B, N, D);
    mask (B, N) 1.0 where a patch was removed. ``norm_pix_loss``: the target is normalised per patch,
    (x - mean) / sqrt(var + 1e-6), with the unbiased variance (as the paper's code)."""
    if norm_pix_loss:
        mean = target.mean(dim=-1, keepdim=True)
        var = target.var(dim=-1, keepdim=True)
        target = (target - mean) / (var + 1.0e-6) ** 0.5
    per_patch = ((prediction - target) ** 2).mean(dim=-1)
    return (per_patch * mask).sum() / mask.sum()


class MAEDecoder(nn.Module):
    """Encoded visible tokens (B, 1 + n_keep, H) -> pixel predictions for every patch (B, N, P * P * C)."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        width = config.decoder_hidden_size
        self.embed = nn.Linear(config.hidden_size, width)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, width))
        self.position_embeddings = nn.Parameter(torch.zeros(1, config.num_patches + 1, width))
        # The encoder's pre-LN block at the decoder's own width and depth (final LayerNorm included).
        self.layers = ViTEncoder(config, ViTBlockShape.mae_decoder(config), config.decoder_num_hidden_layers)
        self.prediction = nn.Linear(width, config.patch_size**2 * config.num_channels)

    def forward(self, encoded: torch.Tensor, ids_restore: torch.Tensor) -> torch.Tensor:
        """encoded (B, 1 + n_keep, H) [CLS] + visible patches, ids_restore (B, N) -> (B, N, P * P * C)."""
        hidden = self.embed(encoded)
        batch, num_visible, width = hidden.shape[0], hidden.shape[1] - 1, hidden.shape[2]
        num_patches = ids_restore.shape[1]
        shuffled = torch.cat((hidden[:, 1:], self.mask_token.expand(batch, num_patches - num_visible, width)), dim=1)
        patches = gather_positions(shuffled, ids_restore)  # back to raster order
        hidden = torch.cat((hidden[:, :1], patches), dim=1) + self.position_embeddings
        hidden, _, _ = self.layers(hidden)  # every token attends to every token: no mask
        return self.prediction(hidden[:, 1:])


@dataclass
class ViTForPreTrainingOutput(ModelOutput):
    """loss: masked-patch MSE; logits (B, N, P * P * C) predicted pixels of every patch (normalised
    per patch when ``norm_pix_loss``); mask (B, N) 1.0 at removed patches; ids_restore (B, N);
    hidden_states / attentions of the encoder over [CLS] + the visible patches."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    ids_restore: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class ViTForPreTraining(ViTPreTrainedModel):
    """MAE: mask ``config.mask_ratio`` of the patches, encode the visible ones, reconstruct the rest.
    The encoder's weights (``vit.*``) load into ViTForImageClassification for fine-tuning."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__(config)
        self.vit = ViTModel(config, add_pooling_layer=False)
        self.decoder = MAEDecoder(config)
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, MAEDecoder):  # its own parameters (Linear and LayerNorm are handled above)
            init.trunc_normal_(module.position_embeddings, mean=0.0, std=self.config.initializer_range)
            init.normal_(module.mask_token, mean=0.0, std=self.config.initializer_range)

    def forward(
        self,
        pixel_values: torch.Tensor | None = None,
        noise: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> ViTForPreTrainingOutput | tuple:
        """pixel_values (B, C, image_size, image_size); noise (B, N) uniform values that choose the
        mask (the smallest ``1 - mask_ratio`` stay visible; random when None). The loss is always
        computed: the images are their own targets."""
        if pixel_values is None:
            raise ValueError("pixel_values are required (a (batch, channels, height, width) tensor)")
        embeddings = self.vit.embeddings
        pixel_values = pixel_values.to(embeddings.patch_embeddings.projection.weight.dtype)
        batch, num_patches = pixel_values.shape[0], self.config.num_patches
        if noise is None:
            noise = torch.rand(batch, num_patches, device=pixel_values.device)
        elif tuple(noise.shape) != (batch, num_patches):
            raise ValueError(
                f"noise has shape {tuple(noise.shape)}, expected (batch, num_patches) = {(batch, num_patches)}"
            )
        kept, mask, ids_restore = random_masking(noise.to(pixel_values.device), self.config.mask_ratio)
        # [CLS] + the visible patches, positions added (the embeddings check the image size: config.num_patches)
        sequence = embeddings(pixel_values, visible_patches=kept)
        outputs = self.vit.encode(sequence, None, output_attentions, output_hidden_states)
        logits = self.decoder(outputs.last_hidden_state, ids_restore)
        target = patchify(pixel_values, self.config.patch_size)
        loss = mae_loss(logits, target, mask.to(logits.dtype), self.config.norm_pix_loss)
        output = ViTForPreTrainingOutput(
            loss=loss,
            logits=logits,
            mask=mask,
            ids_restore=ids_restore,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )
        return output if return_dict is not False else output.to_tuple()


__all__ = ["ViTForPreTraining", "ViTForPreTrainingOutput"]
