"""ELECTRA configuration (Clark et al. 2020, "ELECTRA: Pre-training Text Encoders as Discriminators
Rather Than Generators"). Field names follow transformers' ElectraConfig where it has them."""

from __future__ import annotations

import dataclasses

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig


@strict
class ElectraConfig(VariantConfig):
    """The discriminator's architecture (the encoder every fine-tuning head uses) plus the generator
    and loss settings of the joint replaced-token-detection pretraining.

    Defaults are ELECTRA-Base (E = H = 768, so no embedding projection; see ``modeling_configs/electra-*``
    for Small, with E = 128 < H = 256, and Large). Shared fields and their meaning are declared in
    :class:`TransformerConfig`: post-LN BERT blocks, exact GELU, learned positions, no pooler.

    The generator is derived, not configured field by field (:meth:`generator_config`), as the
    original code does: hidden = ``generator_hidden_size`` x H, FFN = 4 x its hidden, heads =
    its hidden // 64, depth = ``generator_layers`` x L, and the discriminator's embedding tables.
    """

    model_type = "hfv_electra"

    embedding_size: int | None = 768  # E: width of the token/position/segment tables (Small: 128, projected to H)
    generator_hidden_size: float = 0.25  # generator width as a fraction of H (paper Table 6: Small/Large 1/4, Base 1/3)
    generator_layers: float = (
        1.0  # generator depth as a fraction of the discriminator's (the original's generator_layers)
    )
    generator_weight: float = 1.0  # loss = generator_weight * MLM + discriminator_weight * RTD (original gen_weight)
    discriminator_weight: float = 50.0  # lambda of the paper (sec. 2): the RTD loss is ~50x smaller than the MLM loss
    sampling_temperature: float = (
        1.0  # generator samples softmax(logits / T) by Gumbel-max (the original's temperature)
    )
    mlm_probability: float = (
        0.15  # fraction of tokens the RTD collator masks (Large: 0.25); read by run_pretraining, not the model
    )
    # The joint model's RTD logit bias starts at log(p / (1 - p)), p = mlm_probability (the fraction
    # replaced while the generator is untrained), instead of 0 (docs/electra_rootcause.md).
    discriminator_prior_bias: bool = True
    summary_last_dropout: float = 0.1  # multiple choice: dropout after the summary dense + gelu (transformers' name)

    def check_architecture(self) -> None:
        super().check_architecture()
        if not 0.0 < self.generator_hidden_size <= 1.0:
            raise ValueError(f"generator_hidden_size must be in (0, 1], got {self.generator_hidden_size}")
        if not 0.0 < self.generator_layers <= 1.0:
            raise ValueError(f"generator_layers must be in (0, 1], got {self.generator_layers}")
        for name in ("generator_weight", "discriminator_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.sampling_temperature <= 0:
            raise ValueError(f"sampling_temperature must be > 0, got {self.sampling_temperature}")
        if not 0.0 < self.mlm_probability < 1.0:
            raise ValueError(f"mlm_probability must be in (0, 1), got {self.mlm_probability}")
        if not 0.0 <= self.summary_last_dropout < 1.0:
            raise ValueError(f"summary_last_dropout must be in [0, 1), got {self.summary_last_dropout}")
        hidden, heads, layers = self.generator_sizes()
        if hidden < 1 or layers < 1:
            raise ValueError(
                f"the generator would have hidden size {hidden} and {layers} layers: raise generator_hidden_size "
                f"({self.generator_hidden_size}) or generator_layers ({self.generator_layers})"
            )
        if hidden % heads:
            raise ValueError(
                f"generator hidden size {hidden} (= {self.generator_hidden_size} x {self.hidden_size}) is not divisible "
                f"by its {heads} heads (hidden // 64); choose a generator_hidden_size giving a multiple of 64"
            )

    def generator_sizes(self) -> tuple[int, int, int]:
        """(hidden size, attention heads, layers) of the generator, by the original code's rule."""
        hidden = int(round(self.hidden_size * self.generator_hidden_size))
        layers = int(round(self.num_hidden_layers * self.generator_layers))
        return hidden, max(1, hidden // 64), layers

    def generator_config(self) -> "ElectraConfig":
        """The generator's config: this one with the generator's sizes and the discriminator's
        embedding width E (the two share their embedding tables; each projects E to its own H)."""
        hidden, heads, layers = self.generator_sizes()
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init and hasattr(self, f.name)}
        fields.update(
            hidden_size=hidden,
            intermediate_size=4 * hidden,
            num_attention_heads=heads,
            num_hidden_layers=layers,
            head_dim=None,
            embedding_size=self.embedding_size or self.hidden_size,
            generator_hidden_size=1.0,  # a generator has no generator of its own
            generator_layers=1.0,
            architectures=["ElectraForMaskedLM"],
        )
        generator = type(self)(**fields)
        generator._attn_implementation = self._attn_implementation
        return generator
