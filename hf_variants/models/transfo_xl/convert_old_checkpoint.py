"""Convert a checkpoint in the OLD transformers TransfoXL format (``TransfoXLLMHeadModel.save_pretrained``
of transformers < 5: ``config.json`` + ``model.safetensors`` or ``pytorch_model.bin``, and the
tokenizer's pickled ``vocab.pkl``) into ours: safetensors weights and a JSON ``tokenizer.json``.

    python -m hf_variants.models.transfo_xl.convert_old_checkpoint OLD_FOLDER NEW_FOLDER [--unpickle_vocabulary]

Safety: weights are read with ``safetensors`` or ``torch.load(weights_only=True)`` (no code runs).
The vocabulary exists only as a pickle; it is read only when asked (``unpickle_vocabulary=True``),
and then through :class:`PlainDataUnpickler`, which builds nothing but plain containers, strings
and numbers: any other global a pickle names (``os.system``, a class, a function) is refused
with a ``pickle.UnpicklingError`` before it is looked up, so it never runs.
"""

from __future__ import annotations

import argparse
import io
import json
import pickle
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import PreTrainedTokenizerFast

from .modeling_transfo_xl import TransfoXLLMHeadModel
from .tokenization_transfo_xl import tokenizer_from_symbols
from .weights import (
    old_config_to_ours,
    old_key_map,
    per_head_attention,
    shared_biases_to_layers,
    tied_inputs_from_softmax,
)

VOCABULARY_FILE = "vocab.pkl"
# The only globals a vocabulary pickle may name: containers the old vocabulary used (the original
# Vocab's counter and sym2idx). Everything else (and every builtin function) is refused.
ALLOWED_GLOBALS = {
    ("builtins", "dict"),
    ("builtins", "list"),
    ("builtins", "tuple"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "str"),
    ("builtins", "int"),
    ("builtins", "float"),
    ("builtins", "bool"),
    ("collections", "OrderedDict"),
    ("collections", "Counter"),
}


class PlainDataUnpickler(pickle.Unpickler):
    """An unpickler for data only: ``find_class`` admits the containers of ``ALLOWED_GLOBALS``
    and refuses every other global, so a pickle cannot call anything else."""

    def find_class(self, module: str, name: str):
        if (module, name) not in ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(
                f"refused to load {module}.{name} from the vocabulary pickle: only plain containers, strings "
                "and numbers are read (a pickle naming anything else may run code)"
            )
        return super().find_class(module, name)


def read_plain_pickle(path: str | Path) -> object:
    """The data of a pickle that holds only plain containers, strings and numbers (else UnpicklingError)."""
    return PlainDataUnpickler(io.BytesIO(Path(path).read_bytes())).load()


def read_old_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The state dict of an old checkpoint folder, without unpickling anything."""
    if (folder / "model.safetensors").is_file():
        return load_file(folder / "model.safetensors")
    if (folder / "pytorch_model.bin").is_file():
        return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise ValueError(f"{folder} has neither model.safetensors nor pytorch_model.bin")


def vocabulary_symbols(vocabulary: object) -> tuple[list[str], bool]:
    """The old tokenizer's pickled state (a dict with ``idx2sym``, or ``sym2idx``) -> (symbols by
    id, lower_case)."""
    if not isinstance(vocabulary, dict):
        raise ValueError(f"the vocabulary pickle holds a {type(vocabulary).__name__}, expected a dict")
    symbols = vocabulary.get("idx2sym")
    if symbols is None and isinstance(vocabulary.get("sym2idx"), dict):
        by_id = sorted(vocabulary["sym2idx"].items(), key=lambda item: item[1])
        if [index for _, index in by_id] != list(range(len(by_id))):
            raise ValueError("the vocabulary's sym2idx ids are not 0 .. n-1")
        symbols = [symbol for symbol, _ in by_id]
    if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
        raise ValueError("the vocabulary pickle has no idx2sym list of strings (nor a sym2idx dict)")
    return symbols, bool(vocabulary.get("lower_case", False))


def convert_old_checkpoint(
    folder: str | Path, output_dir: str | Path | None = None, unpickle_vocabulary: bool = False
) -> tuple[TransfoXLLMHeadModel, PreTrainedTokenizerFast | None]:
    """Load an old TransfoXLLMHeadModel folder as our model (and, with ``unpickle_vocabulary``,
    its vocabulary as a JSON tokenizer); with ``output_dir``, save both there (safetensors, JSON).

    Without ``unpickle_vocabulary`` the pickle is not opened and the tokenizer is None (build one
    with ``word_level_tokenizer`` or pass the vocabulary another way)."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ValueError(f"{folder} has no config.json")
    config = old_config_to_ours(json.loads((folder / "config.json").read_text()))
    state = tied_inputs_from_softmax(read_old_weights(folder), config)
    state = per_head_attention(
        shared_biases_to_layers(state, config.num_hidden_layers),
        config.num_attention_heads,
        config.head_dim or config.hidden_size // config.num_attention_heads,
    )
    model = TransfoXLLMHeadModel(config)
    ours = old_key_map(config).to_ours(state)
    missing, unexpected = model.load_state_dict(ours, strict=False)
    tied = set(model.all_tied_weights_keys)
    if set(missing) - tied or unexpected:
        raise ValueError(
            f"the checkpoint does not fit the model its config describes: missing "
            f"{sorted(set(missing) - tied)[:8]}, unexpected {sorted(unexpected)[:8]}"
        )
    model.tie_weights()
    model.eval()
    tokenizer = None
    if unpickle_vocabulary:
        if not (folder / VOCABULARY_FILE).is_file():
            raise ValueError(f"{folder} has no {VOCABULARY_FILE}")
        symbols, lowercase = vocabulary_symbols(read_plain_pickle(folder / VOCABULARY_FILE))
        if len(symbols) != config.vocab_size:
            raise ValueError(f"the vocabulary has {len(symbols)} symbols, the model {config.vocab_size}")
        tokenizer = tokenizer_from_symbols(symbols, lowercase)
        config.eos_token_id = tokenizer.eos_token_id
    if output_dir is not None:
        model.save_pretrained(output_dir)
        if tokenizer is not None:
            tokenizer.save_pretrained(output_dir)
    return model, tokenizer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old_folder")
    parser.add_argument("output_dir")
    parser.add_argument(
        "--unpickle_vocabulary",
        action="store_true",
        help=f"read {VOCABULARY_FILE} (a pickle) through the plain-data unpickler",
    )
    args = parser.parse_args(argv)
    convert_old_checkpoint(args.old_folder, args.output_dir, unpickle_vocabulary=args.unpickle_vocabulary)


if __name__ == "__main__":
    main()


__all__ = ["PlainDataUnpickler", "convert_old_checkpoint", "read_plain_pickle"]
