"""Named model flavours shipped in ``modeling_configs/<name>/config.json`` (bert-mini, bert-base, ...).

The folder lives at the repository's top level; a wheel (``pip install .``) carries it as package
data inside the package, ``hf_variants/modeling_configs`` (see setup.py).
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoConfig, PreTrainedConfig

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # hf_variants/ (this file is hf_variants/models/named_configs.py)


def _modeling_configs_dir() -> Path:
    """The installed copy (wheel) if there is one, else the source checkout's top-level folder."""
    installed = _PACKAGE_DIR / "modeling_configs"
    return installed if installed.is_dir() else _PACKAGE_DIR.parent / "modeling_configs"


MODELING_CONFIGS_DIR = _modeling_configs_dir()


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
