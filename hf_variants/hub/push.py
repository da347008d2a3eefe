"""Publishing a run's output directory to the Hub in one commit (`hf-variants push`).

What goes up: safetensors weights (+ shard index), config.json with the remote-code `auto_map`,
the generated `configuration_<v>.py` + `modeling_<v>.py` code, tokenizer/processor files, the model card and its plot, and the
JSON run records. Pickles are never uploaded: pickled weights (`pytorch_model.bin`, `*.pt`, ...)
make the push fail before any request; Trainer's own pickles (training_args.bin, optimizer.pt, ...)
and sub-directories (checkpoint-*, runs/) are skipped and reported.

The output directory is only read: the updated config.json, the code and (if the run has no
README.md yet) the card are generated in a temporary staging directory.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.utils import HFValidationError, validate_repo_id

from .remote_code import export_remote_code, is_generated_code_file
from .run_record import CARD_FILE, rebuild_model_card

try:  # huggingface_hub >= 2 ships its own httpx fork
    from httpx2 import HTTPError as TransportHTTPError
except ImportError:  # pragma: no cover - huggingface_hub 1.x
    from httpx import HTTPError as TransportHTTPError

logger = logging.getLogger(__name__)

UPLOAD_FILES = frozenset(
    {
        "config.json",
        "generation_config.json",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "chat_template.jinja",
        "preprocessor_config.json",
        "processor_config.json",
        "README.md",
        "training_curves.png",
        "trainer_state.json",
        "all_results.json",
        "eval_results.json",
        "train_results.json",
        "training_args.json",
        "hfv_run.json",
    }
)
UPLOAD_PATTERNS = ("*.safetensors", "*.model")  # weights, SentencePiece models
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib")
# Pickles Trainer writes next to the model: training state, never weights. Skipped, not refused.
TRAINER_PICKLES = frozenset({"training_args.bin", "optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state.pth"})


class PushError(RuntimeError):
    """A push that reached the Hub and failed there (HTTP error, dropped connection, ...)."""


@dataclass
class PushResult:
    repo_id: str
    commit_oid: str
    commit_url: str
    uploaded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it was not uploaded


def check_repo_id(repo_id: str) -> None:
    """Raises ValueError for a repo id the Hub would refuse (huggingface_hub's own validator)."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ValueError(f"Invalid Hub repo id {repo_id!r}: {err}") from err


def select_files(output_dir: Path) -> tuple[list[str], dict[str, str]]:
    """(files to upload, {skipped file: reason}); ValueError for pickled weights or no safetensors."""
    upload, skipped, refused = [], {}, []
    for entry in sorted(output_dir.iterdir()):
        name = entry.name
        if entry.is_dir():
            skipped[name + "/"] = "sub-directory (checkpoints, logs) is not part of the published model"
        elif name in TRAINER_PICKLES:
            skipped[name] = "Trainer state pickle: never uploaded (training_args.json carries the arguments)"
        elif name.endswith(PICKLE_SUFFIXES):
            refused.append(name)
        elif name in UPLOAD_FILES or any(fnmatch.fnmatch(name, p) for p in UPLOAD_PATTERNS):
            upload.append(name)
        elif is_generated_code_file(name):  # regenerated into staging from the installed sources
            upload.append(name)
        else:
            skipped[name] = "not a weights, config, tokenizer, card or run-record file"
    if refused:
        raise ValueError(
            f"Refusing to push pickle files from {output_dir}: {', '.join(refused)}. Only safetensors "
            "weights are published; save with `save_pretrained` (safetensors by default) and remove them"
        )
    if not any(name.endswith(".safetensors") for name in upload):
        raise ValueError(f"{output_dir} has no *.safetensors weights to push")
    if "config.json" not in upload:
        raise ValueError(f"{output_dir} has no config.json")
    return upload, skipped


def push_model_dir(
    output_dir: str | os.PathLike,
    repo_id: str,
    *,
    private: bool | None = None,
    commit_message: str | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
    """Uploads a saved run directory to `repo_id` in a single commit (creating the repo if needed).

    Args:
        output_dir: directory written by `save_pretrained` / Trainer (+ `write_model_card`).
        repo_id: "namespace/name"; validated before any request is made.
        private: visibility when the repo is created (ignored if it exists).
        commit_message: defaults to "Upload <model_type> model with hf-variants".
        revision: branch to commit to (default "main"), created from main if missing.
        token, endpoint: passed to `HfApi` (defaults: HF_TOKEN / saved login, HF_ENDPOINT).
    Returns:
        `PushResult` with the commit id and the uploaded / skipped files.
    Raises:
        ValueError: bad repo id or directory content (nothing was sent).
        PushError: the Hub request failed; the message names the repo and the cause. The output
            directory is untouched and calling again completes the push.
    """
    check_repo_id(repo_id)
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        raise ValueError(f"{output_dir} is not a directory")
    upload, skipped = select_files(output_dir)
    # Everything generated goes to a staging directory: the run's directory is only read.
    with tempfile.TemporaryDirectory(prefix="hfv-push-") as staging_dir:
        staging = Path(staging_dir)
        shutil.copyfile(output_dir / "config.json", staging / "config.json")
        export_remote_code(staging)  # code from the installed sources + auto_map, whatever the dir holds
        if CARD_FILE not in upload:
            rebuild_model_card(output_dir, destination=staging, repo_id=repo_id)
        # The code comes from staging only: an older export's files (other names) are not uploaded.
        sources = {name: output_dir / name for name in upload if not is_generated_code_file(name)}
        sources.update({path.name: path for path in staging.iterdir()})
        operations = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(path)) for name, path in sorted(sources.items())
        ]
        with open(staging / "config.json", encoding="utf-8") as f:
            model_type = json.load(f)["model_type"]
        api = HfApi(endpoint=endpoint, token=token)
        try:
            api.create_repo(repo_id, private=private, exist_ok=True)
            if revision not in (None, "main"):
                api.create_branch(repo_id, branch=revision, exist_ok=True)
            info = api.create_commit(
                repo_id,
                operations,
                revision=revision,
                commit_message=commit_message or f"Upload {model_type} model with hf-variants",
            )
        except (TransportHTTPError, OSError, RuntimeError, ValueError) as err:
            raise PushError(
                f"Pushing {output_dir} to the Hub repo {repo_id!r} failed: {type(err).__name__}: {err}"
            ) from err
    if skipped:
        logger.warning("Not uploaded to %s: %s", repo_id, "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    return PushResult(
        repo_id=repo_id, commit_oid=info.oid, commit_url=info.commit_url, uploaded=sorted(sources), skipped=skipped
    )
