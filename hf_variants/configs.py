"""Named model flavours shipped in ``modeling_configs/<name>/config.json`` (bert-mini, bert-base, ...)."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoConfig, PreTrainedConfig

MODELING_CONFIGS_DIR = Path(__file__).resolve().parent.parent / "modeling_configs"


def available_named_configs() -> list[str]:
    return sorted(p.parent.name for p in MODELING_CONFIGS_DIR.glob("*/config.json"))


def named_config_path(name: str) -> Path:
    """``"bert-mini"`` or ``"modeling_configs/bert-mini"`` -> the folder holding its config.json."""
    path = MODELING_CONFIGS_DIR / Path(name).name
    if not (path / "config.json").is_file():
        raise ValueError(f"unknown named config {name!r}; available: {', '.join(available_named_configs())}")
    return path


def is_named_config(name: str) -> bool:
    """True for "bert-mini" or "modeling_configs/bert-mini" (not for a checkpoint dir or a Hub id)."""
    path = Path(str(name))
    if path.is_dir():
        return path.resolve().parent == MODELING_CONFIGS_DIR
    plain = len(path.parts) == 1 or (len(path.parts) == 2 and path.parts[0] == "modeling_configs")
    return plain and (MODELING_CONFIGS_DIR / path.name / "config.json").is_file()


def named_config(name: str, **overrides) -> PreTrainedConfig:
    """Load a named flavour, e.g. ``named_config("bert-mini", num_labels=3)``."""
    return AutoConfig.from_pretrained(str(named_config_path(name)), **overrides)
