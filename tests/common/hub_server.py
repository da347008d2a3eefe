"""A local server speaking the subset of the Hugging Face Hub HTTP API that the real clients use.

The Hub cannot be reached from CI, so the publishing code is tested by pointing the *real*
`huggingface_hub` / `transformers` clients (`HF_ENDPOINT`) at this server over real HTTP.
The routes and payloads follow what huggingface_hub 2.x sends (read from its `hf_api.py`,
`_commit_api.py`, `lfs.py`, `file_download.py`):

    POST /api/repos/create                              create_repo (initial commit: .gitattributes)
    GET  /api/whoami-v2                                 whoami
    GET  /api/agent-harnesses                           user-agent registry (empty)
    POST /api/validate-yaml                             README front matter check (model-index schema)
    GET  /api/models/{repo}[/revision/{rev}]            model_info / repo_info (`blobs=1` adds sizes, LFS)
    GET  /api/models/{repo}/tree/{rev}[/{path}]         list_repo_tree (recursive, expand, Link pagination)
    POST /api/models/{repo}/paths-info/{rev}            get_paths_info
    POST /api/models/{repo}/preupload/{rev}             upload mode (regular / lfs) + remote oid per file
    POST /api/models/{repo}/commit/{rev}                NDJSON commit: header, file (base64), lfsFile, deleted*
    POST /api/models/{repo}/branch/{branch}             create_branch
    POST /{repo}.git/info/lfs/objects/batch             LFS batch API, "basic" transfer
    PUT  /lfs-upload/{sha256}?repo=&sig=                pre-signed single-part upload (no auth header)
    POST /{repo}.git/info/lfs/objects/verify            LFS verify
    HEAD/GET /{repo}/resolve/{rev}/{path}               file download: X-Repo-Commit, ETag; LFS files
                                                        redirect (302) to a "CDN" host with X-Linked-Etag
                                                        (sha256) and X-Linked-Size
    GET  /lfs-cdn/{sha256}                              the CDN (served on host `localhost`, Range aware)

Storage is git-like and on disk: every commit gets a new sha1 revision holding the full file tree;
file contents are content-addressed (git blob sha1 for regular files and LFS pointers, sha256 for
LFS objects). Writes need `Authorization: Bearer <token>` with a token the server knows.

Failure injection (`HubTestServer.inject_failure`) makes the next N requests of one kind answer
500, or drops the TCP connection after reading part of the request body (a "mid-upload" drop).
Requests the server does not implement are answered 404 and recorded in `unhandled`, so a test
can assert the clients used nothing outside the emulated API.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest
import yaml

from tests.common.hub_store import (
    REGULAR_FILE_MAX_BYTES,
    TEST_ORGS,
    TEST_USER,
    HubError,
    HubStore,
    parse_front_matter,
    validate_model_index,
)

FAILURE_KINDS = ("create_repo", "preupload", "lfs_batch", "lfs_upload", "lfs_verify", "commit", "resolve")


@dataclass
class _Failure:
    remaining: int
    mode: str  # "error" (HTTP 500) or "drop" (close the socket mid-body)


@dataclass
class HubTestServer:
    """The running server: `url` to use as HF_ENDPOINT, `token` to use as HF_TOKEN."""

    root: Path
    token: str = field(default_factory=lambda: "hf_test_" + secrets.token_hex(12))
    tree_page_size: int = 1000  # the Hub's page size for /tree listings
    requests: list = field(default_factory=list)  # (method, path, status) of every request
    unhandled: list = field(default_factory=list)  # (method, path) of requests no route matched

    def __post_init__(self):
        self.store = HubStore(self.root)
        self._failures: dict[str, _Failure] = {}
        self._signatures: set[str] = set()
        self._lock = threading.Lock()
        handler = type("BoundHubHandler", (HubRequestHandler,), {"hub": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.cdn_url = f"http://localhost:{self.port}"  # another host: the client drops auth, as for a CDN
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="hub-test-server", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def inject_failure(self, kind: str, times: int = 1, mode: str = "error") -> None:
        """Make the next `times` requests of `kind` fail: HTTP 500 (`error`) or a dropped connection (`drop`)."""
        if kind not in FAILURE_KINDS or mode not in ("error", "drop"):
            raise ValueError(f"kind must be one of {FAILURE_KINDS} and mode 'error' or 'drop'")
        with self._lock:
            self._failures[kind] = _Failure(times, mode)

    def take_failure(self, kind: str) -> str | None:
        with self._lock:
            failure = self._failures.get(kind)
            if failure is None or failure.remaining <= 0:
                return None
            failure.remaining -= 1
            return failure.mode

    def new_upload_signature(self) -> str:
        signature = secrets.token_hex(16)
        with self._lock:
            self._signatures.add(signature)
        return signature

    def is_upload_signature(self, signature: str) -> bool:
        with self._lock:
            return signature in self._signatures

    def count(self, method: str, pattern: str) -> int:
        """How many requests with `method` had a path matching the regex `pattern`."""
        return sum(1 for m, p, _ in self.requests if m == method and re.search(pattern, p))

    def env(self, hf_home: str | os.PathLike) -> dict[str, str]:
        """Environment for a client subprocess talking to this server, with its own empty HF_HOME."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_"))}
        env.update(
            HF_ENDPOINT=self.url,
            HF_HUB_DISABLE_XET="1",
            HF_TOKEN=self.token,
            HF_HOME=str(hf_home),
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_DISABLE_PROGRESS_BARS="1",
            HF_HUB_DISABLE_UPDATE_CHECK="1",
            HF_HUB_OFFLINE="0",
        )
        return env


REPO = r"(?P<repo>[^/]+/[^/]+)"
TYPED_API = r"/api/(?P<type>models|datasets|spaces)/" + REPO
GIT_PREFIX = r"/(?P<prefix>datasets/|spaces/)?" + REPO


class HubRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the clients' connection pools expect
    hub: HubTestServer  # bound by HubTestServer

    ROUTES = [
        ("POST", r"/api/repos/create", "create_repo"),
        ("GET", r"/api/whoami-v2", "whoami"),
        ("GET", r"/api/agent-harnesses", "agent_harnesses"),
        ("POST", r"/api/validate-yaml", "validate_yaml"),
        ("GET", TYPED_API + r"(?:/revision/(?P<rev>[^/]+))?", "repo_info"),
        ("GET", TYPED_API + r"/tree/(?P<rev>[^/]+)(?:/(?P<path>.+))?", "tree"),
        ("POST", TYPED_API + r"/paths-info/(?P<rev>[^/]+)", "paths_info"),
        ("POST", TYPED_API + r"/preupload/(?P<rev>[^/]+)", "preupload"),
        ("POST", TYPED_API + r"/commit/(?P<rev>[^/]+)", "commit"),
        ("POST", TYPED_API + r"/branch/(?P<branch>[^/]+)", "create_branch"),
        ("POST", GIT_PREFIX + r"\.git/info/lfs/objects/batch", "lfs_batch"),
        ("POST", GIT_PREFIX + r"\.git/info/lfs/objects/verify", "lfs_verify"),
        ("PUT", r"/lfs-upload/(?P<oid>[0-9a-f]{64})", "lfs_upload"),
        ("GET", r"/lfs-cdn/(?P<oid>[0-9a-f]{64})", "cdn"),
        ("HEAD", r"/lfs-cdn/(?P<oid>[0-9a-f]{64})", "cdn"),
        ("GET", GIT_PREFIX + r"/resolve/(?P<rev>[^/]+)/(?P<path>.+)", "resolve"),
        ("HEAD", GIT_PREFIX + r"/resolve/(?P<rev>[^/]+)/(?P<path>.+)", "resolve"),
    ]

    def log_message(self, format, *args):  # noqa: A002 - silence per-request stderr logging
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    # --- plumbing ------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        self.query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        self.status_sent = 0
        self.body_read = False  # an error answer must still drain the body, or keep-alive desyncs
        for route_method, pattern, name in self.ROUTES:
            match = re.fullmatch(pattern, split.path)
            if route_method == method and match:
                params = {k: unquote(v) for k, v in match.groupdict().items() if v is not None}
                prefix = params.pop("prefix", "")  # "datasets/" or "spaces/" in git-style URLs
                params.setdefault("type", prefix[:-1] if prefix else "models")
                failure = self.hub.take_failure(name) if name in FAILURE_KINDS else None
                try:
                    if failure == "drop":
                        self._drop_mid_body()
                        return
                    if failure == "error":
                        self._read_body()
                        raise HubError(500, f"Injected internal error on {name}")
                    getattr(self, "route_" + name)(**params)
                except HubError as err:
                    self._send_error(err)
                except (ValueError, KeyError, json.JSONDecodeError) as err:
                    self._send_error(HubError(400, f"Bad request: {err}"))
                finally:
                    self.hub.requests.append((method, split.path, self.status_sent))
                return
        self.hub.unhandled.append((method, self.path))
        self.hub.requests.append((method, split.path, 404))
        self._send_error(HubError(404, f"Route not emulated by the test server: {method} {split.path}"))

    def _read_body(self) -> bytes:
        if self.body_read:
            return b""
        self.body_read = True
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                chunk = self.rfile.read(size)
                self.rfile.readline()  # CRLF after each chunk
                if size == 0:
                    break
                chunks.append(chunk)
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def _json_body(self):
        body = self._read_body()
        if "application/x-www-form-urlencoded" in self.headers.get("Content-Type", ""):
            return {k: (v if len(v) > 1 or k == "paths" else v[0]) for k, v in parse_qs(body.decode()).items()}
        return json.loads(body or b"{}")

    def _drop_mid_body(self) -> None:
        """Read about half of the request body, then reset the connection without answering."""
        length = int(self.headers.get("Content-Length", 0) or 0)
        if length:
            self.rfile.read(max(1, length // 2))
        else:
            self.rfile.read1(65536)
        self.body_read = True
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.connection.shutdown(socket.SHUT_RDWR)

    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict | None = None,
        content_type: str = "application/json",
        content_length: int | None = None,
    ) -> None:
        self.send_response(status)
        self.status_sent = status
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if content_length is None else content_length))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _send_json(self, payload, status: int = 200, headers: dict | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers)

    def _send_error(self, err: HubError) -> None:
        self._read_body()
        headers = {"X-Error-Message": err.message.replace("\n", " "), **err.headers}
        if err.code:
            headers["X-Error-Code"] = err.code
        self._send_json({"error": err.message, **err.body}, err.status, headers)

    def _base_url(self) -> str:
        return f"http://{self.headers.get('Host', f'127.0.0.1:{self.hub.port}')}"

    def _authenticated_user(self, required: bool) -> str | None:
        auth = self.headers.get("Authorization", "")
        if auth == f"Bearer {self.hub.token}":
            return TEST_USER
        if required:
            raise HubError(
                401,
                "Invalid credentials in Authorization header"
                if auth
                else "You must be authenticated to access this endpoint",
            )
        return None

    def _readable_repo(self, repo_type: str, repo_id: str) -> dict:
        repo = self.hub.store.repo(repo_type, repo_id)
        if repo["private"] and self._authenticated_user(required=False) is None:
            raise HubError(404, f"Repository Not Found for url: {repo_id}", "RepoNotFound")
        return repo

    def _writable_repo(self, repo_type: str, repo_id: str) -> dict:
        self._authenticated_user(required=True)
        namespace = repo_id.split("/")[0]
        repo = self.hub.store.repo(repo_type, repo_id)
        if namespace not in (TEST_USER, *TEST_ORGS):
            raise HubError(403, f"You don't have the rights to create a commit in {repo_id}")
        return repo

    def _tree_at(self, repo_type: str, repo_id: str, rev: str) -> tuple[str, dict]:
        self._readable_repo(repo_type, repo_id)
        sha = self.hub.store.resolve(repo_type, repo_id, rev)
        return sha, self.hub.store.commit(sha)["tree"]

    # --- repo management -----------------------------------------------------------------
    def route_create_repo(self, type: str) -> None:
        user = self._authenticated_user(required=True)
        payload = self._json_body()
        namespace = payload.get("organization") or user
        if namespace not in (user, *TEST_ORGS):
            raise HubError(403, f"You don't have the rights to create a repo under {namespace}")
        repo_type = (payload.get("type") or "model") + "s"
        repo_id = f"{namespace}/{payload['name']}"
        prefix = "" if repo_type == "models" else f"{repo_type}/"
        answer = {"url": f"{self._base_url()}/{prefix}{repo_id}", "name": repo_id, "id": repo_id}
        try:
            self.hub.store.create_repo(repo_type, repo_id, private=payload.get("visibility") == "private")
        except HubError as err:
            err.body = answer  # the Hub's 409 still carries the url, which create_repo(exist_ok=True) reads
            raise
        self._send_json(answer)

    def route_whoami(self, type: str) -> None:
        user = self._authenticated_user(required=True)
        self._send_json(
            {
                "type": "user",
                "id": "1",
                "name": user,
                "fullname": "HF Variants Tester",
                "orgs": [{"name": org, "type": "org"} for org in TEST_ORGS],
                "auth": {"type": "access_token", "accessToken": {"displayName": "test", "role": "write"}},
            }
        )

    def route_agent_harnesses(self, type: str) -> None:
        """The registry huggingface_hub reads for its user-agent string: none registered here."""
        self._send_json({"standardEnvVars": [], "harnesses": {}})

    def route_validate_yaml(self, type: str) -> None:
        payload = self._json_body()
        try:
            errors = validate_model_index(parse_front_matter(payload["content"]))
        except (yaml.YAMLError, ValueError) as err:
            errors = [f"Invalid YAML: {err}"]
        if errors:
            self._send_json({"errors": [{"message": e} for e in errors], "warnings": []}, 400)
        else:
            self._send_json({"errors": [], "warnings": []})

    def route_create_branch(self, type: str, repo: str, branch: str) -> None:
        self._writable_repo(type, repo)
        payload = self._json_body() if int(self.headers.get("Content-Length", 0) or 0) else {}
        self.hub.store.create_branch(type, repo, branch, payload.get("startingPoint") or "main")
        self._send_json({})

    # --- read API ------------------------------------------------------------------------
    def _file_json(self, path: str, entry: dict) -> dict:
        info = {"type": "file", "oid": entry["oid"], "size": entry["size"], "path": path}
        if entry["lfs"]:
            info["lfs"] = dict(entry["lfs"])
        return info

    def route_repo_info(self, type: str, repo: str, rev: str = "main") -> None:
        sha, tree = self._tree_at(type, repo, rev)
        record = self.hub.store.repo(type, repo)
        with_blobs = self.query.get("blobs", "").lower() in ("1", "true")
        siblings = []
        for path in sorted(tree):
            sibling = {"rfilename": path}
            if with_blobs:
                entry = tree[path]
                sibling.update(size=entry["size"], blobId=entry["oid"])
                if entry["lfs"]:
                    lfs = entry["lfs"]
                    sibling["lfs"] = {"size": lfs["size"], "sha256": lfs["oid"], "pointerSize": lfs["pointerSize"]}
            siblings.append(sibling)
        card = {}
        if "README.md" in tree:
            try:
                card = parse_front_matter(self.hub.store.blob(tree["README.md"]["oid"]).decode())
            except (yaml.YAMLError, ValueError):
                card = {}
        config = {}
        if "config.json" in tree:
            full = json.loads(self.hub.store.blob(tree["config.json"]["oid"]))
            config = {k: full[k] for k in ("architectures", "model_type", "auto_map") if k in full}
        commit = self.hub.store.commit(sha)
        self._send_json(
            {
                "_id": hashlib.sha1(repo.encode()).hexdigest()[:24],
                "id": repo,
                "modelId": repo,
                "author": repo.split("/")[0],
                "sha": sha,
                "lastModified": commit["date"],
                "private": record["private"],
                "disabled": False,
                "gated": False,
                "downloads": 0,
                "likes": 0,
                "tags": card.get("tags", []),
                "library_name": card.get("library_name"),
                "cardData": card or None,
                "config": config or None,
                "siblings": siblings,
                "createdAt": commit["date"],
                "usedStorage": sum(e["size"] for e in tree.values()),
            }
        )

    def _entries_under(self, tree: dict, path: str, recursive: bool) -> list[tuple[str, dict | None]]:
        """(path, entry) for files and (path, None) for folders directly (or recursively) under `path`."""
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        if prefix and not any(p.startswith(prefix) for p in tree):
            raise HubError(404, f"Path {path} not found", "EntryNotFound")
        folders, files = set(), []
        for file_path, entry in tree.items():
            if not file_path.startswith(prefix):
                continue
            parts = file_path[len(prefix) :].split("/")
            for depth in range(1, len(parts)):
                folder = prefix + "/".join(parts[:depth])
                if recursive or depth == 1:
                    folders.add(folder)
            if recursive or len(parts) == 1:
                files.append((file_path, entry))
        return sorted([(f, None) for f in folders] + files, key=lambda item: item[0])

    def _entry_json(self, head: str, tree: dict, path: str, entry: dict | None, expand: bool) -> dict:
        if entry is None:
            content = json.dumps({p: e["oid"] for p, e in tree.items() if p.startswith(path + "/")}, sort_keys=True)
            info = {"type": "directory", "oid": hashlib.sha1(content.encode()).hexdigest(), "size": 0, "path": path}
        else:
            info = self._file_json(path, entry)
        if expand and entry is not None:
            info["lastCommit"] = self.hub.store.last_commit_touching(head, path)
        return info

    def route_tree(self, type: str, repo: str, rev: str, path: str = "") -> None:
        head, tree = self._tree_at(type, repo, rev)
        recursive = self.query.get("recursive", "").lower() in ("1", "true")
        expand = self.query.get("expand", "").lower() in ("1", "true")
        entries = self._entries_under(tree, path, recursive)
        start = int(self.query.get("cursor", 0))
        page = entries[start : start + self.hub.tree_page_size]
        headers = {}
        if start + self.hub.tree_page_size < len(entries):
            split = urlsplit(self.path)
            query = {**self.query, "cursor": str(start + self.hub.tree_page_size)}
            next_url = f"{self._base_url()}{split.path}?" + "&".join(f"{k}={quote(v)}" for k, v in query.items())
            headers["Link"] = f'<{next_url}>; rel="next"'
        self._send_json([self._entry_json(head, tree, p, e, expand) for p, e in page], headers=headers)

    def route_paths_info(self, type: str, repo: str, rev: str) -> None:
        head, tree = self._tree_at(type, repo, rev)
        payload = self._json_body()
        paths = payload.get("paths", [])
        paths = [paths] if isinstance(paths, str) else paths
        expand = str(payload.get("expand", "")).lower() in ("1", "true")
        infos = []
        for path in paths:
            path = path.strip("/")
            if path in tree:
                infos.append(self._entry_json(head, tree, path, tree[path], expand))
            elif any(p.startswith(path + "/") for p in tree):
                infos.append(self._entry_json(head, tree, path, None, expand))
        self._send_json(infos)

    def route_resolve(self, type: str, repo: str, rev: str, path: str) -> None:
        sha, tree = self._tree_at(type, repo, rev)
        entry = tree.get(path)
        if entry is None:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": sha})
        headers = {"X-Repo-Commit": sha, "Accept-Ranges": "bytes"}
        if entry["lfs"]:
            lfs = entry["lfs"]
            headers.update(
                {
                    "ETag": f'"{entry["oid"]}"',
                    "X-Linked-Etag": f'"{lfs["oid"]}"',
                    "X-Linked-Size": str(lfs["size"]),
                    "Location": f"{self.hub.cdn_url}/lfs-cdn/{lfs['oid']}",
                }
            )
            self._send(302, b"", headers)
            return
        content = self.hub.store.blob(entry["oid"])
        headers["ETag"] = f'"{entry["oid"]}"'
        self._send_ranged(content, headers)

    def route_cdn(self, type: str, oid: str) -> None:
        stored = self.hub.store.lfs_path(oid)
        if not stored.exists():
            raise HubError(404, f"No such object: {oid}")
        self._send_ranged(stored.read_bytes(), {"ETag": f'"{oid}"'}, "application/octet-stream")

    def _send_ranged(self, content: bytes, headers: dict, content_type: str = "application/octet-stream") -> None:
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match is None:
            self._send(200, content, headers, content_type)
            return
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else len(content) - 1
        if start >= len(content):
            raise HubError(416, f"Range start {start} beyond size {len(content)}")
        headers = {**headers, "Content-Range": f"bytes {start}-{end}/{len(content)}"}
        self._send(206, content[start : end + 1], headers, content_type)

    # --- write API -----------------------------------------------------------------------
    def route_preupload(self, type: str, repo: str, rev: str) -> None:
        self._writable_repo(type, repo)
        if self.query.get("create_pr"):
            raise HubError(400, "Pull requests are not emulated by the test server")
        _, tree = self._tree_at(type, repo, rev)
        payload = self._json_body()
        files = []
        for item in payload["files"]:
            sample = base64.b64decode(item["sample"])
            lfs = (
                self.hub.store.is_lfs_path(tree, item["path"])
                or b"\x00" in sample
                or item["size"] >= REGULAR_FILE_MAX_BYTES
            )
            existing = tree.get(item["path"])
            remote_oid = None
            if existing is not None:
                remote_oid = existing["lfs"]["oid"] if existing["lfs"] else existing["oid"]
            files.append(
                {
                    "path": item["path"],
                    "uploadMode": "lfs" if lfs else "regular",
                    "shouldIgnore": False,
                    "oid": remote_oid,
                }
            )
        self._send_json({"files": files, "commitOid": self.hub.store.resolve(type, repo, rev)})

    def route_lfs_batch(self, type: str, repo: str) -> None:
        self._writable_repo(type, repo)
        payload = self._json_body()
        if payload.get("operation") != "upload":
            raise HubError(400, "Only LFS uploads go through the batch API in this server")
        objects = []
        for obj in payload["objects"]:
            answer = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            stored = self.hub.store.lfs_path(obj["oid"])
            if not (stored.exists() and stored.stat().st_size == obj["size"]):
                signature = self.hub.new_upload_signature()
                git_path = ("" if type == "models" else f"{type}/") + repo + ".git/info/lfs/objects/verify"
                answer["actions"] = {
                    "upload": {
                        "href": f"{self._base_url()}/lfs-upload/{obj['oid']}?size={obj['size']}&sig={signature}"
                    },
                    "verify": {"href": f"{self._base_url()}/{git_path}"},
                }
            objects.append(answer)
        self._send_json({"transfer": "basic", "objects": objects, "hash_algo": "sha256"})

    def route_lfs_upload(self, type: str, oid: str) -> None:
        body = self._read_body()
        if not self.hub.is_upload_signature(self.query.get("sig", "")):
            raise HubError(403, "Upload URL signature is missing or invalid")
        if hashlib.sha256(body).hexdigest() != oid or len(body) != int(self.query.get("size", -1)):
            raise HubError(400, f"Uploaded content does not match oid {oid} / size {self.query.get('size')}")
        stored = self.hub.store.lfs_path(oid)
        if not stored.exists():
            self.hub.store.write_atomic(stored, body)
        self._send(200, b"", {"ETag": f'"{oid}"'})

    def route_lfs_verify(self, type: str, repo: str) -> None:
        self._writable_repo(type, repo)
        payload = self._json_body()
        stored = self.hub.store.lfs_path(payload["oid"])
        if not stored.exists() or stored.stat().st_size != payload["size"]:
            raise HubError(404, f"LFS object {payload['oid']} not found or of the wrong size")
        self._send_json({"success": True})

    def route_commit(self, type: str, repo: str, rev: str) -> None:
        self._writable_repo(type, repo)
        if self.query.get("create_pr"):
            raise HubError(400, "Pull requests are not emulated by the test server")
        lines = [json.loads(line) for line in self._read_body().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "The first NDJSON line of a commit must be its header")
        operations = [(line["key"], line["value"]) for line in lines[1:]]
        sha = self.hub.store.apply_commit(type, repo, rev, lines[0]["value"], operations)
        prefix = "" if type == "models" else f"{type}/"
        self._send_json(
            {
                "success": True,
                "commitOid": sha,
                "pullRequestUrl": None,
                "commitUrl": f"{self._base_url()}/{prefix}{repo}/commit/{sha}",
            }
        )


# --- pytest plumbing ---------------------------------------------------------------------------


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A running server, with this process's huggingface_hub / transformers clients pointed at it.

    huggingface_hub reads HF_ENDPOINT / HF_HUB_OFFLINE / HF_HUB_DISABLE_XET into `constants` at
    import time (and the test session imports it offline), so the constants themselves are
    patched; transformers' shared `HfApi` is reset so that it is rebuilt with the new endpoint.
    Subprocess clients get real environment variables instead (`HubTestServer.env`).
    """
    from huggingface_hub import constants
    from transformers.utils import hub as transformers_hub

    server = HubTestServer(tmp_path / "hub-storage")
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", server.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setenv("HF_TOKEN", server.token)
    monkeypatch.setattr(transformers_hub, "_hf_api", None)
    yield server
    transformers_hub._hf_api = None
    server.close()


def start_client(script: str, env: dict[str, str]) -> subprocess.Popen:
    """Starts `script` in a fresh Python process (see `finish_client`)."""
    return subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        cwd=env.get("HF_HOME"),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish_client(process: subprocess.Popen, timeout: float = 180) -> dict:
    """Waits for a client; it must print one JSON object as its last stdout line."""
    stdout, stderr = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise AssertionError(f"client process failed ({process.returncode}):\n{stderr[-4000:]}")
    return json.loads(stdout.strip().splitlines()[-1])
