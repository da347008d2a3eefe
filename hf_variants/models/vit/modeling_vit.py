"""ViT (Dosovitskiy et al. 2021): an image cut into P x P patches, each linearly embedded (a strided
convolution), a learned [CLS] token in front, learned positions, and a pre-LN Transformer encoder.
Classification reads the final-norm [CLS] state; ``ViTForMaskedImageModeling`` is transformers'
SimMIM-style head (Xie et al. 2022). MAE pretraining (He et al. 2022) is in ``mae.py``.

The architecture, top to bottom in the order data flows: :class:`ViTPatchEmbeddings` (conv
patchify) -> :class:`ViTEmbeddings` ([CLS], learned positions, bicubic interpolation for other image
sizes, SimMIM's mask token, MAE's visible patches) -> :class:`ViTSelfAttention` (fused QKV, the
shared :func:`~hf_variants.modules.attention.attention_function`: eager or SDPA by
``attn_implementation``) -> :class:`ViTMLP` -> :class:`ViTLayer` (pre-LN residual block) ->
:class:`ViTEncoder` (the stack, its final LayerNorm; ALBERT-style sharing for ablations) ->
:class:`ViTModel` (+ tanh pooler over [CLS]) -> :class:`ViTForImageClassification`,
:class:`ViTForMaskedImageModeling`; ``mae.py``'s ``ViTForPreTraining`` reuses the layer for its
decoder (:class:`ViTBlockShape` gives it its own width).

Against BERT (``models/bert/modeling_bert.py``) the differences are: patches instead of word
embeddings (no segments, no embedding LayerNorm), pre-LN blocks with a final LayerNorm, and the last
entry of ``hidden_states`` taken before that final norm (transformers' ViT convention).

Submodule names are those of the key map (``weights.py``), which converts to and from
transformers' ViT (fused ``qkv`` = its q, k and v projections stacked).

Speed is a plug-in: with ``config.padding_free`` (default on) and CPU inputs, :class:`ViTModel`
hands the embedded sequence to :class:`~hf_variants.modules.fast_path.PaddingFreePath`
(``encode_embedded``), which runs these same layers packed when an ``attention_mask`` pads rows and
computes the last layer at [CLS] alone for the classifier (:class:`~hf_variants.modules.fast_path.HeadReads`);
results are identical. With ``config.padding_free = False`` (and on CUDA) the plain path below is
all that runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPooling,
    ImageClassifierOutput,
    MaskedImageModelingOutput,
)
from transformers.utils import ModelOutput

from ...modules.attention import FusedQKVProjection, attention_function, packed_self_attention
from ...modules.dropout import make_dropout
from ...modules.fast_path import HeadReads, fast_path_for
from ...modules.heads import Pooler, sequence_classification_loss
from ...modules.masks import KeyMask, make_attention_bias
from ...modules.norms import build_norm
from ...modules.padding import UnpaddedBatch, gather_positions
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
        self.dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def check_inputs(self, pixel_values: torch.Tensor, interpolate_pos_encoding: bool) -> None:
        """ValueErrors naming the problem, for pixels the model cannot embed."""
        if not isinstance(pixel_values, torch.Tensor) or pixel_values.dim() != 4:
            shape = tuple(pixel_values.shape) if isinstance(pixel_values, torch.Tensor) else type(pixel_values).__name__
            raise ValueError(f"pixel_values must be a (batch, channels, height, width) tensor, got {shape}")
        batch, channels, height, width = pixel_values.shape
        if batch == 0:
            raise ValueError(f"empty batch: pixel_values has shape {tuple(pixel_values.shape)} (no examples)")
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


# ----------------------------------------------------------------------------- block shape
@dataclass(frozen=True)
class ViTBlockShape:
    """The sizes and options of one encoder block. The encoder's come from the config (every
    ablation field); MAE's decoder blocks have their own width, depth and heads and the paper's plain
    block otherwise (LayerNorm, biases, ungated GELU MLP), whatever the encoder's ablations."""

    hidden_size: int
    num_heads: int
    intermediate_size: int
    head_dim: int | None = None  # None: hidden_size // num_heads
    attention_scale: float | None = None  # None: 1 / sqrt(head_dim)
    use_bias: bool = True
    gated_ffn: bool = False
    norm_type: str = "layer_norm"
    ffn_dropout_prob: float = 0.0

    @classmethod
    def encoder(cls, config: ViTConfig) -> ViTBlockShape:
        return cls(
            hidden_size=config.hidden_size,
            num_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            head_dim=config.head_dim,
            attention_scale=config.attention_scale,
            use_bias=config.use_bias,
            gated_ffn=config.gated_ffn,
            norm_type=config.norm_type,
            ffn_dropout_prob=config.ffn_dropout_prob,
        )

    @classmethod
    def mae_decoder(cls, config: ViTConfig) -> ViTBlockShape:
        return cls(
            hidden_size=config.decoder_hidden_size,
            num_heads=config.decoder_num_attention_heads,
            intermediate_size=config.decoder_intermediate_size,
        )

    def norm(self, config: ViTConfig) -> nn.Module:
        return build_norm(self.norm_type, self.hidden_size, config.layer_norm_eps)


# ----------------------------------------------------------------------------- attention
class ViTSelfAttention(nn.Module):
    """Multi-head self-attention over [CLS] + patches: fused QKV projection -> attention -> output
    projection. (B, T, H) -> (B, T, H) (or (N, H) packed, or (B, M, H) at ``query_positions``)."""

    adapter_role = "attention"  # peft's default targets: its input projection (integrations/peft_targets.py)

    def __init__(self, config: ViTConfig, shape: ViTBlockShape) -> None:
        super().__init__()
        self.config = config  # attn_implementation is read at each call: it may be switched at run time
        self.num_heads = shape.num_heads
        self.head_dim = shape.head_dim or shape.hidden_size // shape.num_heads
        self.inner_size = self.num_heads * self.head_dim
        self.scale = shape.attention_scale if shape.attention_scale is not None else 1.0 / math.sqrt(self.head_dim)
        self.dropout_prob = config.attention_probs_dropout_prob
        # One GEMM instead of three; the key map splits it into transformers' q_proj, k_proj, v_proj.
        self.qkv = FusedQKVProjection(shape.hidden_size, 3 * self.inner_size, bias=shape.use_bias)
        self.out = nn.Linear(self.inner_size, shape.hidden_size, bias=shape.use_bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, heads * D) -> (B, heads, T, D)."""
        return x.view(*x.shape[:2], self.num_heads, self.head_dim).transpose(1, 2)

    def _project(
        self, hidden_states: torch.Tensor, query_positions: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, H) -> query (B, T or M, inner), key and value (B, T, inner). With ``query_positions``
        (B, M) the queries nobody reads are never projected (the fused weight's query rows alone)."""
        if query_positions is None:
            return self.qkv(hidden_states).chunk(3, dim=-1)
        query_input = gather_positions(hidden_states, query_positions)
        if isinstance(self.qkv, FusedQKVProjection):
            query, key_value = self.qkv(query_input, hidden_states)
            return (query, *key_value.chunk(2, dim=-1))
        # Wrapped by an adapter (peft's LoRA, (IA)^3): run the whole projection, keep the rows needed.
        return (
            self.qkv(query_input)[..., : self.inner_size],
            *self.qkv(hidden_states)[..., self.inner_size :].chunk(2, dim=-1),
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | UnpaddedBatch | None = None,
        output_attentions: bool = False,
        query_positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend. ``attention_mask``: an additive (B, 1, 1, T) bias (None: every token is seen), or
        the fast path's packed batch (then ``hidden_states`` are (N, H)). ``query_positions`` (B, M):
        compute those queries only (the fast path's last layer, [CLS] for the classifier).
        Returns (output, attention probabilities (B, heads, T, T) if asked, else None)."""
        dropout = self.dropout_prob if self.training else 0.0
        backend = "eager" if output_attentions or self.config._attn_implementation == "eager" else "sdpa"
        if isinstance(attention_mask, UnpaddedBatch):  # the padding-free fast path (modules/fast_path.py)
            context = packed_self_attention(
                self.qkv(hidden_states), attention_mask, self.num_heads, self.scale, dropout, False, backend
            )
            return self.out(context), None
        query, key, value = (self._split_heads(x) for x in self._project(hidden_states, query_positions))
        context, probs = attention_function(query, key, value, attention_mask, False, dropout, self.scale, backend)
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2)
        if torch.compiler.is_exporting():
            # The ONNX exporter decomposes SDPA into matmuls whose output is (B, heads, T, D)-contiguous:
            # the reshape below must not be recorded as a view of it (see BertSelfAttention.forward).
            context = context.clone(memory_format=torch.contiguous_format)
        return self.out(context.reshape(batch, length, self.inner_size)), probs


# ----------------------------------------------------------------------------- MLP
class ViTMLP(nn.Module):
    """MLP(x) = W_down GELU(W_up x) (gated for ablations: W_down (act(W_gate x) * W_up x)).
    (..., H) -> (..., H)."""

    adapter_role = "feed_forward"  # (IA)^3's feed-forward module (integrations/peft_targets.py)

    def __init__(self, config: ViTConfig, shape: ViTBlockShape) -> None:
        super().__init__()
        self.up = nn.Linear(shape.hidden_size, shape.intermediate_size, bias=shape.use_bias)
        self.gate = (
            nn.Linear(shape.hidden_size, shape.intermediate_size, bias=shape.use_bias) if shape.gated_ffn else None
        )
        self.activation = ACT2FN[config.hidden_act]
        self.inner_dropout = make_dropout(shape.ffn_dropout_prob, config.padding_free)
        self.down = nn.Linear(shape.intermediate_size, shape.hidden_size, bias=shape.use_bias)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.gate is None:
            inner = self.activation(self.up(hidden_states))
        else:
            inner = self.activation(self.gate(hidden_states)) * self.up(hidden_states)
        return self.down(self.inner_dropout(inner))


# ----------------------------------------------------------------------------- layer and stack
class ViTLayer(GradientCheckpointingLayer):
    """One pre-LN block (the paper's eq. 2-3): x = x + Dropout(MSA(LN(x))); x = x + Dropout(MLP(LN(x))).

    A layer whose attention or MLP is shared with layer 0 (``config.layer_sharing``) stores none and
    is handed layer 0's by the encoder (so safetensors sees each shared tensor once)."""

    def __init__(
        self, config: ViTConfig, shape: ViTBlockShape, own_attention: bool = True, own_ffn: bool = True
    ) -> None:
        super().__init__()
        self.attention = ViTSelfAttention(config, shape) if own_attention else None
        self.attention_norm = shape.norm(config)  # transformers: layernorm_before
        self.ffn = ViTMLP(config, shape) if own_ffn else None
        self.ffn_norm = shape.norm(config)  # transformers: layernorm_after
        self.residual_dropout = make_dropout(config.hidden_dropout_prob, config.padding_free)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | UnpaddedBatch | None = None,
        output_attentions: bool = False,
        query_positions: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        layer_idx: int | None = None,
        shared_attention: ViTSelfAttention | None = None,
        shared_ffn: ViTMLP | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, H) -> ((B, T, H), attention probabilities or None); arguments as
        :meth:`ViTSelfAttention.forward`. With ``query_positions`` (B, M) the output is (B, M, H).
        ``past_key_values`` and ``layer_idx`` are unused (images take no key/value prefix): the
        slots give the layer the call shape of ``modules/fast_path.py``'s interface. All positional
        where they vary per depth: gradient checkpointing replays positional inputs."""
        attention = self.attention if self.attention is not None else shared_attention
        ffn = self.ffn if self.ffn is not None else shared_ffn
        residual = hidden_states if query_positions is None else gather_positions(hidden_states, query_positions)
        attention_output, probs = attention(
            self.attention_norm(hidden_states), attention_mask, output_attentions, query_positions
        )
        hidden_states = residual + self.residual_dropout(attention_output)
        del residual, attention_output  # not needed by the MLP: freed before it runs (peak memory)
        hidden_states = hidden_states + self.residual_dropout(ffn(self.ffn_norm(hidden_states)))
        return hidden_states, probs


class ViTEncoder(nn.Module):
    """``num_layers`` ViTLayers and the final LayerNorm that closes a pre-LN stack. ``sharing``
    (ALBERT's ablation, ``config.layer_sharing``): "none", "all" (one layer applied at every depth),
    "attention" or "ffn" (that sub-block of layer 0 used at every depth)."""

    def __init__(self, config: ViTConfig, shape: ViTBlockShape, num_layers: int, sharing: str = "none") -> None:
        super().__init__()
        self.num_layers = num_layers
        self.sharing = sharing
        if sharing == "all":
            self.layers = nn.ModuleList([ViTLayer(config, shape)])
        else:
            self.layers = nn.ModuleList(
                ViTLayer(
                    config, shape, own_attention=i == 0 or sharing != "attention", own_ffn=i == 0 or sharing != "ffn"
                )
                for i in range(num_layers)
            )
        self.final_layer_norm = shape.norm(config)  # transformers: ViTModel.layernorm

    def layer_at(self, depth: int) -> ViTLayer:
        return self.layers[0] if self.sharing == "all" else self.layers[depth]

    def shared_blocks(self, depth: int) -> tuple[ViTSelfAttention | None, ViTMLP | None]:
        """(attention, MLP) of layer 0 where the layer at ``depth`` shares them, else None."""
        return (
            self.layers[0].attention if self.sharing == "attention" else None,
            self.layers[0].ffn if self.sharing == "ffn" else None,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None, tuple[torch.Tensor, ...] | None]:
        """(B, T, H) embeddings, additive (B, 1, 1, T) bias or None -> (final-norm states (B, T, H),
        every layer's input + the last layer's output *before* the final norm if asked (as
        transformers' ViT), every layer's attention probabilities if asked)."""
        all_hidden_states = () if output_hidden_states else None
        all_attentions = () if output_attentions else None
        for depth in range(self.num_layers):
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            hidden_states, probs = self.layer_at(depth)(
                hidden_states, attention_mask, output_attentions, None, None, depth, *self.shared_blocks(depth)
            )
            if output_attentions:
                all_attentions += (probs,)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        return self.final_layer_norm(hidden_states), all_hidden_states, all_attentions


# ----------------------------------------------------------------------------- models
class ViTPreTrainedModel(VariantPreTrainedModel):
    config_class = ViTConfig
    base_model_prefix = "vit"
    main_input_name = "pixel_values"
    input_modalities = ("image",)
    # Beside the layers, the modules holding parameters of their own next to their children (the
    # [CLS] token and position table; MAE's mask token and decoder positions) stay whole, as in
    # transformers' ViT / ViTMAE: split, their own parameters would miss accelerate's offload hooks.
    _no_split_modules = ["ViTEmbeddings", "ViTLayer", "MAEDecoder"]
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


class ViTModel(ViTPreTrainedModel):
    """The bare ViT encoder: embeddings -> encoder (final LayerNorm included) -> pooler.
    ``last_hidden_state`` (B, 1 + N, H) is after the final LayerNorm; ``pooler_output`` (with
    ``add_pooling_layer``, the default, as transformers' ViTModel) is tanh(W h_[CLS]).
    ``use_mask_token`` adds SimMIM's mask token (``bool_masked_pos``)."""

    def __init__(self, config: ViTConfig, add_pooling_layer: bool = True, use_mask_token: bool = False) -> None:
        super().__init__(config)  # config.check_architecture(): a ValueError naming a bad field
        self.config = config
        self.embeddings = ViTEmbeddings(config, use_mask_token=use_mask_token)
        self.encoder = ViTEncoder(
            config, ViTBlockShape.encoder(config), config.num_hidden_layers, sharing=config.layer_sharing
        )
        self.pooler = Pooler(config.hidden_size) if add_pooling_layer else None
        self.post_init()

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
        reads: HeadReads | None = None,
    ) -> BaseModelOutputWithPooling | tuple:
        """Encode images.

        Args:
            pixel_values: (B, C, height, width), e.g. from ViTImageProcessor.
            bool_masked_pos: (B, N) True where a patch is replaced by the mask token (needs ``use_mask_token``).
            interpolate_pos_encoding: resize the position table to this image size (see ViTEmbeddings).
            attention_mask: (B, 1 + N) 1 for tokens to attend to, or None (every token).
            reads: what the caller reads (:class:`~hf_variants.modules.fast_path.HeadReads`); with
                ``summary_only`` last_hidden_state is (B, 1, H), [CLS] alone.
        Returns:
            BaseModelOutputWithPooling: last_hidden_state (B, 1 + N, H), pooler_output (B, H) or None,
            hidden_states (layers + 1 of (B, 1 + N, H), the last before the final norm) and
            attentions (layers of (B, heads, 1 + N, 1 + N)) if asked.
        """
        if pixel_values is None:
            raise ValueError("pixel_values are required (a (batch, channels, height, width) tensor)")
        if isinstance(pixel_values, torch.Tensor):
            pixel_values = pixel_values.to(self.embeddings.patch_embeddings.projection.weight.dtype)
        embedding_output = self.embeddings(pixel_values, bool_masked_pos, bool(interpolate_pos_encoding))
        output = self.encode(embedding_output, attention_mask, output_attentions, output_hidden_states, reads)
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        return output if return_dict else output.to_tuple()

    def encode(
        self,
        embedding_output: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        reads: HeadReads | None = None,
    ) -> BaseModelOutputWithPooling:
        """The encoder and pooler over an embedded (B, T, H) sequence: [CLS] + patches from
        :meth:`forward`, or [CLS] + the visible patches of MAE (``mae.py``). ``attention_mask``
        (B, T) or None. Returns what :meth:`forward` returns, as a ModelOutput."""
        config = self.config
        output_attentions = bool(output_attentions if output_attentions is not None else config.output_attentions)
        output_hidden_states = bool(
            output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        )
        reads = reads or HeadReads()
        keep_mask = attention_bias = None  # images usually come without a mask: every token sees every token
        if attention_mask is not None:
            batch, length = embedding_output.shape[:2]
            keep_mask = KeyMask.prepare(attention_mask, batch, length).new_tokens  # a ValueError naming a bad mask
            attention_bias = make_attention_bias(keep_mask, embedding_output.dtype)  # (B, 1, 1, T) or None

        fast_path = None
        if config.padding_free:  # the speed plug-in's rule (modules/fast_path.py): CPU, nothing it cannot give
            fast_path = fast_path_for(config, embedding_output.device, output_attentions or output_hidden_states, False)
        if fast_path is not None:  # the same modules, packed and only where read (modules/fast_path.py)
            sequence_output, pooled_output = fast_path.encode_embedded(self, embedding_output, keep_mask, reads)
            return BaseModelOutputWithPooling(last_hidden_state=sequence_output, pooler_output=pooled_output)

        # The plain path.
        sequence_output, all_hidden_states, all_attentions = self.encoder(
            embedding_output, attention_bias, output_attentions, output_hidden_states
        )
        pooled_output = self.pooler(sequence_output[:, 0]) if self.pooler is not None else None  # [CLS]
        return BaseModelOutputWithPooling(
            # [CLS] is position 0 of every row: the summary a head reading it alone gets, (B, 1, H).
            last_hidden_state=sequence_output[:, :1] if reads.summary_only else sequence_output,
            pooler_output=pooled_output,
            hidden_states=all_hidden_states,
            attentions=all_attentions,
        )


class ViTModelLoadedWithOwnKeyMap(ViTModel):
    """ViTModel under another name, used by ``ViTModel.from_pretrained`` only (which hands back a
    ViTModel). transformers looks a checkpoint conversion up by class name before model_type, and
    its own "ViTModel" has one (transformers 4 -> 5 renames) that would replace our key map; under
    this name it applies the map registered for "hfv_vit". See conversion.loading.class_for_loading."""


ViTModel.loading_class = ViTModelLoadedWithOwnKeyMap


# ----------------------------------------------------------------------------- heads
def _return(output: ModelOutput, return_dict: bool | None) -> ModelOutput | tuple:
    """The heads' return: the ModelOutput unless ``return_dict=False`` is asked for."""
    return output if return_dict is not False else output.to_tuple()


class ViTForImageClassification(ViTPreTrainedModel):
    """A linear classifier on the final-norm [CLS] state (transformers' head; no pooler). On the
    fast path the last layer computes [CLS] alone unless hidden states or attentions are asked for
    (same logits)."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.vit = ViTModel(config, add_pooling_layer=False)
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
        outputs = self.vit(
            pixel_values,
            interpolate_pos_encoding=interpolate_pos_encoding,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            reads=HeadReads(summary_only=True),  # the classifier reads [CLS] alone
        )
        logits = self.classifier(outputs.last_hidden_state[:, 0])
        loss = sequence_classification_loss(self.config, logits, labels) if labels is not None else None
        return _return(
            ImageClassifierOutput(
                loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
            ),
            return_dict,
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


class ViTForMaskedImageModeling(ViTPreTrainedModel):
    """SimMIM-style masked image modelling (transformers' ViTForMaskedImageModeling): masked patches
    become the mask token, and a 1x1 convolution + pixel shuffle maps each patch state back to its
    P x P pixels; L1 loss on the masked patches. ``encoder_stride`` must equal ``patch_size`` to
    compute the loss."""

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
        outputs = self.vit(
            pixel_values,
            bool_masked_pos=bool_masked_pos,
            interpolate_pos_encoding=interpolate_pos_encoding,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        patches = outputs.last_hidden_state[:, 1:]
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
        return _return(
            MaskedImageModelingOutput(
                loss=loss,
                reconstruction=reconstruction,
                hidden_states=outputs.hidden_states,
                attentions=outputs.attentions,
            ),
            return_dict,
        )


__all__ = [
    "ViTPreTrainedModel",
    "ViTModel",
    "ViTForImageClassification",
    "ViTForMaskedImageModeling",
]
