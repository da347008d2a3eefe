"""What ``OurClass.from_pretrained`` adds to transformers' loading (called by name from the hooks in
``hf_variants/models/configuration_base.py`` and ``hf_variants/models/modeling_base.py``).

The weights are renamed by transformers itself, from the conversion mapping each variant
registers (see :func:`hf_variants.conversion.register_weights`). This module translates a source
checkpoint's config.json and refuses checkpoints that would leave the model mostly random.
"""

from __future__ import annotations

from typing import Any, Callable

from transformers import PreTrainedConfig, PreTrainedModel
from transformers.conversion_mapping import get_checkpoint_conversion_mapping

from .variant_weights import WEIGHTS

# A checkpoint of the family supplies every encoder weight; one supplying fewer than this share of
# them is another architecture (or a broken file), and loading it would leave a model that is
# mostly random with nothing but a log line to say so.
MIN_LOADED_BACKBONE_FRACTION = 0.5

# from_pretrained arguments that locate the checkpoint's files (passed on when re-reading config.json).
_DOWNLOAD_ARGUMENTS = ("cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder", "proxies")


def _describe(config_dict: dict) -> str:
    model_type = config_dict.get("model_type")
    architectures = config_dict.get("architectures")
    text = f"model_type {model_type!r}" if model_type else "no model_type"
    return text + (f", architectures {architectures}" if architectures else "")


def translate_config_dict(config_class: type, config_dict: dict, source: Any = None) -> dict:
    """A checkpoint's config.json contents, as ``config_class`` (one of ours) should read them.

    Our own model_type is read as is; a source format of the variant (transformers' "bert", or a
    config.json old enough to have no model_type) is translated; any other model_type raises a
    ValueError naming it, rather than building our config from another architecture's fields.
    """
    weights = WEIGHTS.get(config_class.model_type)
    model_type = config_dict.get("model_type")
    if weights is None or not config_dict or model_type == config_class.model_type:
        return config_dict
    if model_type is None or model_type in weights.source_model_types:
        return weights.config_dict_to_ours(config_dict)
    readable = ", ".join(repr(t) for t in (config_class.model_type, *weights.source_model_types))
    raise ValueError(
        f"{source or 'the checkpoint'} is a checkpoint of another architecture ({_describe(config_dict)}); "
        f"{config_class.__name__} reads only {readable} checkpoints. Load it with the class made for it "
        f"(e.g. transformers.AutoModel.from_pretrained), or build a randomly initialised model with from_config."
    )


def backbone_parameter_names(model: PreTrainedModel) -> list[str]:
    """Names (as in the state dict) of the encoder's parameters: all of a bare model's, the ones
    under ``base_model_prefix`` for a model with a head."""
    names = [name for name, _ in model.named_parameters()]
    prefix = model.base_model_prefix
    if prefix and hasattr(model, prefix) and getattr(model, prefix) is not model:
        names = [name for name in names if name.startswith(prefix + ".")]
    return names


def check_backbone_loaded(
    model: PreTrainedModel, missing_keys: set[str] | list[str], source: Any, read_config: Callable[[], dict] = dict
) -> None:
    """Raise ValueError when the checkpoint supplied fewer than half of the encoder's weights.

    A missing task head (a bare-encoder checkpoint loaded into a classification model) is the
    normal case transformers reports; a missing encoder means the checkpoint is something else.
    ``read_config`` returns the checkpoint's config.json contents, to name it in the error.
    """
    backbone = backbone_parameter_names(model)
    missing = set(missing_keys)
    loaded = [name for name in backbone if name not in missing]
    if backbone and len(loaded) < MIN_LOADED_BACKBONE_FRACTION * len(backbone):
        example = next((name for name in backbone if name in missing), "")
        raise ValueError(
            f"{source} supplies {len(loaded)} of the {len(backbone)} encoder weights of {type(model).__name__} "
            f"(missing e.g. {example!r}): it is not a checkpoint of this architecture ({_describe(read_config())}). "
            f"Load it with the class made for it (e.g. transformers.AutoModel.from_pretrained), or build a "
            f"randomly initialised {type(model).__name__} with from_config if that is what you want."
        )


def class_for_loading(cls: type) -> type:
    """``cls``, or the subclass it declares as ``loading_class`` where its name is one transformers
    keeps a conversion mapping for.

    transformers looks a model's checkpoint conversion up by class name before model_type. Where
    one of our classes shares its name with one of transformers' (``hf_variants.ViTModel`` and
    transformers' ``ViTModel``, whose mapping renames transformers 4 names to transformers 5
    ones), transformers would apply its renames instead of the key map we register under our
    model_type, and the bare model would not load a transformers checkpoint. Such a class declares
    a subclass with another name and nothing added (``models/vit/modeling_vit.py``), through which
    transformers uses ours; a class that lacks one is refused here rather than loaded wrongly.
    """
    if get_checkpoint_conversion_mapping(cls.__name__) is None:
        return cls
    loader = cls.__dict__.get("loading_class")
    if loader is None:
        raise TypeError(
            f"{cls.__name__} shares its name with a transformers class that has a checkpoint conversion "
            f"mapping, which would replace this variant's key map on load: declare a subclass with another "
            f"name as {cls.__name__}.loading_class (see ViTModel)"
        )
    return loader


def load_checked(cls: type, load: Callable, pretrained_model_name_or_path, *model_args, **kwargs):
    """transformers' ``from_pretrained`` (``load``), then :func:`check_backbone_loaded`.

    Returns what ``from_pretrained`` returns (the model, or (model, loading info) with
    ``output_loading_info=True``).
    """
    wants_info = kwargs.pop("output_loading_info", False)
    config = kwargs.get("config")
    if isinstance(config, PreTrainedConfig) and not isinstance(config, cls.config_class):
        # e.g. a transformers BertConfig passed along with its checkpoint: translated like its config.json.
        kwargs["config"] = cls.config_class(
            **translate_config_dict(cls.config_class, config.to_dict(), config.name_or_path)
        )
    model, info = load(pretrained_model_name_or_path, *model_args, output_loading_info=True, **kwargs)
    missing = info.get("missing_keys") if isinstance(info, dict) else None
    if pretrained_model_name_or_path is not None and missing is not None:
        download = {k: kwargs[k] for k in _DOWNLOAD_ARGUMENTS if k in kwargs}

        def read_config() -> dict:
            # The checkpoint's own config.json (untranslated), to name what it is in the error.
            try:
                return PreTrainedConfig.get_config_dict(pretrained_model_name_or_path, **download)[0]
            except (OSError, ValueError):
                return {}

        check_backbone_loaded(model, missing, pretrained_model_name_or_path, read_config)
    return (model, info) if wants_info else model
