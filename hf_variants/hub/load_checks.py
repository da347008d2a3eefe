"""Clear errors when a checkpoint cannot be loaded into an hf-variants model.

`RemoteCodeMixin.from_pretrained` (`hf_variants.models.modeling_base`: every hf-variants model)
runs its load through `checked_from_pretrained`, which turns what transformers reports as a
low-level exception, a warning or nothing at all into a `ValueError` naming the file and the key:

- a truncated or corrupted safetensors file (its size must match its header), a corrupted
  config.json (position of the JSON error), an unknown `model_type`;
- a weight of another shape than the model's (unless `ignore_mismatched_sizes=True`, transformers'
  way to re-initialise such weights on purpose);
- a weight whose dtype kind differs (integers where the model holds floats, or the reverse);
  float precisions (fp16/bf16 checkpoints) are converted as transformers does;
- missing or extra weights inside a part the checkpoint and the model share (a layer of the
  encoder, one parameter of a head). A part the checkpoint lacks entirely (a new classifier head
  on a pretrained encoder, a pooler) or holds but the model lacks (the MLM head when fine-tuning)
  keeps transformers' behaviour: initialised, or dropped, with transformers' report. So do the
  parameters a model lists in ``_initialised_when_missing`` (regexes: ViT's optional mask token).

Pickled weights are never loaded: safetensors is required (`use_safetensors=True` unless the
caller passes `use_safetensors=False`), and a folder holding only `pytorch_model.bin` is refused.
"""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path
from typing import Any, Callable

from .checkpoints import safetensors_problem

CONFIG_FILE = "config.json"
PICKLED_WEIGHTS = (
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "model.ckpt.index",
    "flax_model.msgpack",
)
# Buffers older transformers checkpoints saved (BERT's position_ids): not weights, ignored.
OLD_BUFFERS = re.compile(r"(^|\.)(position_ids|token_type_ids)$")
INTEGER_DTYPES = {"BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"}


def _local_folder(path: Any, kwargs: dict) -> Path | None:
    if path is None or not os.path.isdir(path):
        return None
    folder = Path(path)
    return folder / kwargs["subfolder"] if kwargs.get("subfolder") else folder


def check_config_file(folder: Path, model_class: type | None = None) -> dict:
    """The parsed config.json of a checkpoint folder; ValueError naming the file and the problem."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    path = folder / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{folder} has no {CONFIG_FILE}: not a saved checkpoint")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is corrupted: not UTF-8 text ({err.reason} at byte {err.start})") from err
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path} is corrupted: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from err
    if not isinstance(config, dict):
        raise ValueError(f"{path} is corrupted: a JSON object was expected, found {type(config).__name__}")
    model_type = config.get("model_type")  # absent in old checkpoints: the config class translates them
    own_type = getattr(
        getattr(model_class, "config_class", None), "model_type", None
    )  # a class not registered with Auto
    if model_type is not None and model_type not in CONFIG_MAPPING and model_type != own_type:
        known = sorted(name for name in CONFIG_MAPPING if name.startswith("hfv_"))
        raise ValueError(
            f"{path}: key 'model_type' is {model_type!r}, a model type neither hf-variants ({', '.join(known)}) "
            "nor transformers knows (import hf_variants first; a newer version may be needed)"
        )
    return config


def weight_headers(folder: Path, allow_pickles: bool) -> dict[str, tuple[str, list[int], str]]:
    """{key: (safetensors dtype, shape, file name)} of a checkpoint folder's safetensors weights,
    each file checked whole; ValueError for a truncated/corrupted file, or pickled weights only."""
    files = sorted(name for name in os.listdir(folder) if name.endswith(".safetensors"))
    if not files:
        pickles = [name for name in PICKLED_WEIGHTS if (folder / name).exists()]
        if pickles and not allow_pickles:
            raise ValueError(
                f"{folder} holds only pickled weights ({', '.join(pickles)}): hf-variants loads safetensors "
                "only (pass use_safetensors=False to load them with torch.load(weights_only=True))"
            )
        return {}
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (UnicodeDecodeError, ValueError, KeyError, AttributeError) as err:
            raise ValueError(f"{index} is corrupted: not a valid shard index ({err})") from err
        missing = sorted(shard for shard in shards if not (folder / shard).is_file())
        if missing:
            raise ValueError(f"{index} lists shards that are missing: {', '.join(missing)}")
    headers = {}
    for name in files:
        problem = safetensors_problem(folder / name)
        if problem:
            raise ValueError(f"cannot load {folder / name}: {problem}")
        with open(folder / name, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        for key, entry in header.items():
            if key != "__metadata__":
                headers[key] = (entry.get("dtype"), entry.get("shape"), name)
    return headers


def component(key: str, base_model_prefix: str) -> str:
    """The part of the model a weight belongs to: the backbone's first level ("bert.encoder",
    "bert.pooler") or a head's top-level module ("classifier", "cls", "sbo_head")."""
    parts = key.split(".")
    return ".".join(parts[:2]) if parts[0] == base_model_prefix and len(parts) > 2 else parts[0]


def checked_from_pretrained(load: Callable, model_class: type, path: Any, args: tuple, kwargs: dict):
    """``load(path, *args, **kwargs)`` (transformers' from_pretrained) with the checks of the
    module docstring; returns what transformers returns (model, or (model, loading info))."""
    folder = _local_folder(path, kwargs)
    allow_pickles = kwargs.get("use_safetensors") is False
    headers: dict = {}
    if folder is not None:
        if "config" not in kwargs or isinstance(kwargs.get("config"), (str, os.PathLike)):
            check_config_file(folder, model_class)
        headers = weight_headers(folder, allow_pickles)
    if not allow_pickles:
        kwargs["use_safetensors"] = True
    wants_info = kwargs.pop("output_loading_info", False)
    re_initialise = kwargs.get("ignore_mismatched_sizes", False)
    kwargs["ignore_mismatched_sizes"] = True  # report mismatches ourselves, with the file and key
    try:
        model, info = load(path, *args, output_loading_info=True, **kwargs)
    except Exception as err:
        if type(err).__name__ == "SafetensorError":
            raise ValueError(f"{path}: cannot read the safetensors weights ({err})") from err
        raise
    where = f"{folder}" if folder is not None else f"{path}"
    files = sorted({file for _, _, file in headers.values()}) or ["the checkpoint"]
    where_weights = ", ".join(f"{where}/{file}" if folder is not None else file for file in files)

    if info["mismatched_keys"] and not re_initialise:
        details = "; ".join(
            f"{key}: checkpoint {tuple(saved)} vs model {tuple(expected)}"
            for key, saved, expected in sorted(info["mismatched_keys"])
        )
        raise ValueError(
            f"{where_weights}: weights of the wrong shape for {type(model).__name__}: {details} "
            "(pass ignore_mismatched_sizes=True to re-initialise them)"
        )
    state = model.state_dict()
    wrong_dtypes = [
        f"{key} is {dtype} in {file} but {state[key].dtype} in the model"
        for key, (dtype, _, file) in sorted(headers.items())
        if key in state and (dtype in INTEGER_DTYPES) == state[key].is_floating_point()
    ]
    if wrong_dtypes:
        raise ValueError(f"{where}: weights of the wrong dtype: {'; '.join(wrong_dtypes)}")
    prefix = model_class.base_model_prefix
    tied = set(getattr(model, "all_tied_weights_keys", None) or {})  # copies of another weight, never saved
    loaded = (set(state) - set(info["missing_keys"]) - tied) | set(info["unexpected_keys"])
    in_checkpoint = {component(key, prefix) for key in loaded}
    in_model = {component(key, prefix) for key in state}
    # Parameters a model holds only when built for one head (ViT's mask token with use_mask_token)
    # are what transformers initialises and reports when a checkpoint of the bare model lacks them.
    optional = [re.compile(pattern) for pattern in getattr(model, "_initialised_when_missing", ())]
    missing = sorted(
        key
        for key in info["missing_keys"]
        if component(key, prefix) in in_checkpoint and not any(pattern.search(key) for pattern in optional)
    )
    extra = sorted(
        key for key in info["unexpected_keys"] if component(key, prefix) in in_model and not OLD_BUFFERS.search(key)
    )
    if missing or extra:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unexpected {', '.join(extra)}"] if extra else []
        )
        raise ValueError(
            f"{where_weights} does not match {type(model).__name__} ({model.config.model_type}): {'; '.join(problems)}"
        )
    return (model, info) if wants_info else model
