"""Storage and metadata rules of the local Hub test server (see hub_server.py).

Git-like and on disk: every commit gets a new sha1 revision holding the full file tree; contents
are content-addressed (git blob sha1 for regular files and LFS pointers, sha256 for LFS objects).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import re
import secrets
import threading
import time
from pathlib import Path

import yaml

TEST_USER = "hfv-tester"
TEST_ORGS = ("org", "hf-variants")
# Same list as the Hub's default .gitattributes for new model repos (trimmed to model formats).
LFS_PATTERNS = (
    "*.7z *.arrow *.bin *.bz2 *.ckpt *.ftz *.gz *.h5 *.joblib *.lfs.* *.mlmodel *.model *.msgpack *.npy "
    "*.npz *.onnx *.ot *.parquet *.pb *.pickle *.pkl *.pt *.pth *.rar *.safetensors saved_model/**/* "
    "*.tar.* *.tar *.tflite *.tgz *.wasm *.xz *.zip *.zst *tfevents*"
).split()
DEFAULT_GITATTRIBUTES = "".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in LFS_PATTERNS)
REGULAR_FILE_MAX_BYTES = 10 * 1024 * 1024  # the Hub refuses larger non-LFS files


class HubError(Exception):
    """An API error answered as JSON with the Hub's `X-Error-Code` / `X-Error-Message` headers."""

    def __init__(
        self, status: int, message: str, code: str | None = None, headers: dict | None = None, body: dict | None = None
    ):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}
        self.body = body or {}  # extra JSON fields of the error answer


def git_blob_sha1(content: bytes) -> str:
    """The git object id of a blob, which the Hub reports as a regular file's oid / ETag."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def validate_model_index(metadata: dict) -> list[str]:
    """Errors in the card metadata's `model-index`, following the Hub's model-index schema.

    Schema (hub-docs modelcard.md): a list of {name, results: [{task: {type, name?},
    dataset: {type, name, config?, split?, revision?, args?}, metrics: [{type, value, name?,
    config?, args?, verified?}]}]}.
    """
    errors: list[str] = []
    index = metadata.get("model-index")
    if index is None:
        return errors
    if not isinstance(index, list):
        return ["model-index must be a list"]
    for i, model in enumerate(index):
        if not isinstance(model, dict) or not isinstance(model.get("name"), str):
            errors.append(f"model-index[{i}].name must be a string")
            continue
        results = model.get("results")
        if not isinstance(results, list):
            errors.append(f"model-index[{i}].results must be a list")
            continue
        for j, result in enumerate(results):
            where = f"model-index[{i}].results[{j}]"
            task, dataset, metrics = result.get("task"), result.get("dataset"), result.get("metrics")
            if not isinstance(task, dict) or not isinstance(task.get("type"), str):
                errors.append(f"{where}.task.type must be a string")
            if not isinstance(dataset, dict) or not all(isinstance(dataset.get(k), str) for k in ("type", "name")):
                errors.append(f"{where}.dataset needs string 'type' and 'name'")
            elif any(k in dataset and not isinstance(dataset[k], str) for k in ("config", "split", "revision")):
                errors.append(f"{where}.dataset config/split/revision must be strings")
            if not isinstance(metrics, list) or not metrics:
                errors.append(f"{where}.metrics must be a non-empty list")
                continue
            for k, metric in enumerate(metrics):
                if not isinstance(metric, dict) or not isinstance(metric.get("type"), str) or "value" not in metric:
                    errors.append(f"{where}.metrics[{k}] needs a string 'type' and a 'value'")
                elif "verified" in metric and not isinstance(metric["verified"], bool):
                    errors.append(f"{where}.metrics[{k}].verified must be a boolean")
    return errors


def parse_front_matter(readme: str) -> dict:
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", readme, flags=re.DOTALL)
    if match is None:
        return {}
    loaded = yaml.safe_load(match.group(1))
    if not isinstance(loaded, dict):
        raise ValueError("README front matter must be a YAML mapping")
    return loaded


class HubStore:
    """Repos, commits and content-addressed file storage under one directory (thread-safe)."""

    def __init__(self, root: Path):
        self.root = root
        for sub in ("blobs", "lfs", "commits", "repos", "tmp"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()

    # --- content -------------------------------------------------------------------------
    def put_blob(self, content: bytes) -> str:
        oid = git_blob_sha1(content)
        path = self.root / "blobs" / oid
        if not path.exists():
            self.write_atomic(path, content)
        return oid

    def blob(self, oid: str) -> bytes:
        return (self.root / "blobs" / oid).read_bytes()

    def lfs_path(self, sha256: str) -> Path:
        return self.root / "lfs" / sha256

    def write_atomic(self, path: Path, content: bytes) -> None:
        tmp = self.root / "tmp" / secrets.token_hex(8)
        tmp.write_bytes(content)
        os.replace(tmp, path)

    # --- repos and commits ---------------------------------------------------------------
    def _repo_file(self, repo_type: str, repo_id: str) -> Path:
        return self.root / "repos" / repo_type / f"{repo_id}.json"

    def repo(self, repo_type: str, repo_id: str) -> dict:
        path = self._repo_file(repo_type, repo_id)
        if not path.exists():
            raise HubError(404, f"Repository Not Found for url: {repo_type}/{repo_id}", "RepoNotFound")
        return json.loads(path.read_text())

    def create_repo(self, repo_type: str, repo_id: str, private: bool) -> None:
        with self.lock:
            path = self._repo_file(repo_type, repo_id)
            if path.exists():
                raise HubError(409, f"You already created this {repo_type[:-1]} repo: {repo_id}")
            path.parent.mkdir(parents=True, exist_ok=True)
            tree = {".gitattributes": self._regular_entry(DEFAULT_GITATTRIBUTES.encode())}
            sha = self._write_commit(None, tree, "initial commit", "")
            path.write_text(json.dumps({"refs": {"main": sha}, "private": private, "created": time.time()}))

    def _regular_entry(self, content: bytes) -> dict:
        return {"oid": self.put_blob(content), "size": len(content), "lfs": None}

    def _write_commit(self, parent: str | None, tree: dict, title: str, description: str) -> str:
        commit = {
            "parents": [parent] if parent else [],
            "tree": tree,
            "title": title,
            "description": description,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        }
        encoded = json.dumps(commit, sort_keys=True).encode()
        sha = hashlib.sha1(encoded + secrets.token_bytes(8)).hexdigest()
        (self.root / "commits" / f"{sha}.json").write_bytes(encoded)
        return sha

    def commit(self, sha: str) -> dict:
        return json.loads((self.root / "commits" / f"{sha}.json").read_text())

    def resolve(self, repo_type: str, repo_id: str, revision: str) -> str:
        repo = self.repo(repo_type, repo_id)
        if revision in repo["refs"]:
            return repo["refs"][revision]
        if re.fullmatch(r"[0-9a-f]{40}", revision) and (self.root / "commits" / f"{revision}.json").exists():
            return revision
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    def create_branch(self, repo_type: str, repo_id: str, branch: str, start: str) -> None:
        with self.lock:
            repo = self.repo(repo_type, repo_id)
            if branch in repo["refs"]:
                raise HubError(409, f"Reference already exists: refs/heads/{branch}")
            repo["refs"][branch] = self.resolve(repo_type, repo_id, start)
            self._repo_file(repo_type, repo_id).write_text(json.dumps(repo))

    def apply_commit(self, repo_type: str, repo_id: str, branch: str, header: dict, operations: list) -> str:
        """Applies NDJSON operations on top of `branch`; all-or-nothing (nothing is written on error)."""
        with self.lock:
            repo = self.repo(repo_type, repo_id)
            if branch not in repo["refs"]:
                raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
            head = repo["refs"][branch]
            parent = header.get("parentCommit")
            if parent and not head.startswith(parent):
                raise HubError(412, f"A commit has happened since {parent}: head of '{branch}' is {head}")
            tree = dict(self.commit(head)["tree"])
            for key, value in operations:
                path = value["path"]
                if key == "file":
                    content = base64.b64decode(value["content"])
                    if len(content) > REGULAR_FILE_MAX_BYTES:
                        raise HubError(400, f"{path} is larger than 10MB: it must be stored with LFS")
                    tree[path] = self._regular_entry(content)
                elif key == "lfsFile":
                    stored = self.lfs_path(value["oid"])
                    if not stored.exists():
                        raise HubError(422, f"LFS object {value['oid']} for '{path}' was never uploaded")
                    size = stored.stat().st_size
                    pointer = lfs_pointer(value["oid"], size)
                    tree[path] = {
                        "oid": self.put_blob(pointer),
                        "size": size,
                        "lfs": {"oid": value["oid"], "size": size, "pointerSize": len(pointer)},
                    }
                elif key == "deletedFile":
                    if tree.pop(path, None) is None:
                        raise HubError(404, f"File not found: {path}", "EntryNotFound")
                elif key == "deletedFolder":
                    prefix = path.rstrip("/") + "/"
                    for existing in [p for p in tree if p.startswith(prefix)]:
                        del tree[existing]
                else:
                    raise HubError(400, f"Unknown commit operation key: {key!r}")
            sha = self._write_commit(head, tree, header.get("summary", ""), header.get("description", ""))
            repo["refs"][branch] = sha
            self._repo_file(repo_type, repo_id).write_text(json.dumps(repo))
            return sha

    def history(self, sha: str):
        while sha:
            commit = self.commit(sha)
            yield sha, commit
            sha = commit["parents"][0] if commit["parents"] else None

    def last_commit_touching(self, head: str, path: str) -> dict:
        """The newest commit whose tree changed `path` (what `expand=True` reports as lastCommit)."""
        commits = list(self.history(head))
        for (sha, commit), (_, parent) in zip(commits, commits[1:] + [(None, {"tree": {}})]):
            if commit["tree"].get(path) != parent["tree"].get(path):
                return {"id": sha, "title": commit["title"], "date": commit["date"]}
        sha, commit = commits[-1]
        return {"id": sha, "title": commit["title"], "date": commit["date"]}

    def is_lfs_path(self, tree: dict, path: str) -> bool:
        attributes = self._gitattributes(tree)
        return any(
            fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern) for pattern in attributes
        )

    def _gitattributes(self, tree: dict) -> list[str]:
        entry = tree.get(".gitattributes")
        if entry is None:
            return []
        lines = self.blob(entry["oid"]).decode().splitlines()
        return [line.split()[0] for line in lines if "filter=lfs" in line]
