"""transformers' own test mixins, pinned to the installed release, assembled at test time.

Nothing of transformers' test code is committed here. The mixins come from two places:

- the top-level ``tests/*.py`` (``ModelTesterMixin`` in ``test_modeling_common.py``,
  ``ConfigTester`` in ``test_configuration_common.py``, ...) ship in transformers' sdist: we
  ``pip download`` the sdist of exactly the installed version (PyPI is a package registry, the one
  network our CI may use) and extract those files;
- three files they import are only in transformers' repository: ``generation/test_utils.py``
  (``GenerationTesterMixin``), ``exporters/test_export.py`` (``ExportTesterMixin``) and
  ``utils/test_configuration_utils.py`` (``config_common_kwargs``). They are read from
  ``$HFV_TRANSFORMERS_REPO_TESTS`` (the ``tests/`` folder of a transformers checkout at the tag
  ``v<version>``) or downloaded from GitHub at that tag. Where neither is possible the tree gets
  inert stand-ins so the common tests still import; the tests that need the real file then
  *skip by name with the reason* (:func:`require_repo_file`), never silently.

Everything lands in ``$HFV_TRANSFORMERS_TESTS_CACHE`` (default ``~/.cache/hf-variants``) under
``transformers-tests-<version>/tree*/hfv_tf_tests`` (one tree per source of the repository-only
files): a package of its own name, so the mixins' relative imports (``from .generation.test_utils
import ...``) resolve without clashing with our ``tests``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

import transformers

VERSION = transformers.__version__
PACKAGE = "hfv_tf_tests"
REPO_ONLY = ("generation/test_utils.py", "exporters/test_export.py", "utils/test_configuration_utils.py")
RAW_URL = "https://raw.githubusercontent.com/huggingface/transformers/v{version}/tests/{path}"

# Inert stand-ins for the repository-only files (used only when the real file cannot be had).
STAND_INS = {
    "generation/test_utils.py": "STAND_IN = True\n\n\nclass GenerationTesterMixin:\n    pass\n",
    "exporters/test_export.py": "STAND_IN = True\n\n\nclass ExportTesterMixin:\n    pass\n",
    "utils/test_configuration_utils.py": "STAND_IN = True\nconfig_common_kwargs = {}\n",
}


def cache_root() -> Path:
    base = Path(os.environ.get("HFV_TRANSFORMERS_TESTS_CACHE", Path.home() / ".cache" / "hf-variants"))
    return base / f"transformers-tests-{VERSION}"


def _sdist() -> Path:
    """transformers' sdist of the installed version (``$HFV_TRANSFORMERS_SDIST`` or pip download)."""
    given = os.environ.get("HFV_TRANSFORMERS_SDIST")
    if given:
        return Path(given)
    folder = cache_root() / "sdist"
    found = sorted(folder.glob(f"transformers-{VERSION}.tar.gz"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"transformers=={VERSION}",
                "-d",
                str(folder),
            ],
            check=True,
        )
        found = sorted(folder.glob(f"transformers-{VERSION}.tar.gz"))
    return found[0]


def _repo_file(path: str) -> tuple[str, str]:
    """(text, where it came from) of a repository-only test file, or a stand-in."""
    local = os.environ.get("HFV_TRANSFORMERS_REPO_TESTS")
    if local and (Path(local) / path).is_file():
        return (Path(local) / path).read_text(), f"{local}/{path}"
    url = RAW_URL.format(version=VERSION, path=path)
    if os.environ.get("HFV_TRANSFORMERS_FETCH_REPO_TESTS") != "1":
        # Tests and CI reach no network but the package registries: GitHub only when asked for.
        return STAND_INS[
            path
        ], f"stand-in (set HFV_TRANSFORMERS_REPO_TESTS, or HFV_TRANSFORMERS_FETCH_REPO_TESTS=1 to read {url})"
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return response.read().decode(), url
    except OSError as error:  # offline, or the tag is unreachable: an inert stand-in, reported
        return STAND_INS[path], f"stand-in ({url} unreachable: {error.__class__.__name__})"


def _build(target: Path) -> None:
    """Extract the sdist's top-level tests and add the repository-only files under ``target``."""
    staging = Path(tempfile.mkdtemp(dir=target.parent))
    package = staging / PACKAGE
    package.mkdir()
    prefix = f"transformers-{VERSION}/tests/"
    with tarfile.open(_sdist()) as archive:
        for member in archive.getmembers():
            name = member.name[len(prefix) :] if member.name.startswith(prefix) else ""
            if member.isfile() and name.endswith(".py") and "/" not in name:
                (package / name).write_bytes(archive.extractfile(member).read())
    provenance = {"transformers": VERSION, "sdist": str(_sdist())}
    for path in REPO_ONLY:
        text, origin = _repo_file(path)
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text(text)
        provenance[path] = origin
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    (staging / "provenance.json").write_text(json.dumps(provenance, indent=1))
    os.replace(staging, target)  # atomic: xdist workers may race; the loser's rename fails harmlessly


def _tree_name() -> str:
    """The tree's folder name, one per source of the repository-only files: ``tree`` with no source
    configured, else ``tree-<digest>`` of ``$HFV_TRANSFORMERS_REPO_TESTS`` (and those files' bytes
    there) and ``$HFV_TRANSFORMERS_FETCH_REPO_TESTS``. A tree built earlier with stand-ins (an
    offline first run) is then not reused once a checkout is given: the generation tests appear."""
    local = os.environ.get("HFV_TRANSFORMERS_REPO_TESTS")
    fetch = os.environ.get("HFV_TRANSFORMERS_FETCH_REPO_TESTS") == "1"
    if not local and not fetch:
        return "tree"
    digest = hashlib.sha256(f"{local}|{fetch}".encode())
    for path in REPO_ONLY:
        if local and (Path(local) / path).is_file():
            digest.update((Path(local) / path).read_bytes())
    return f"tree-{digest.hexdigest()[:12]}"


def ensure_tree() -> Path:
    """The folder holding the ``hfv_tf_tests`` package (built once per transformers version and
    source of the repository-only files, see :func:`_tree_name`)."""
    target = cache_root() / _tree_name()
    if not (target / "provenance.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            _build(target)
        except OSError:
            if not (target / "provenance.json").is_file():
                raise
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    return target


def provenance() -> dict:
    return json.loads((ensure_tree() / "provenance.json").read_text())


def load(module: str):
    """``hfv_tf_tests.<module>``, e.g. ``load("test_modeling_common")``."""
    ensure_tree()
    return importlib.import_module(f"{PACKAGE}.{module}")


def is_stand_in(path: str) -> bool:
    return provenance()[path].startswith("stand-in")


def require_repo_file(test_case, path: str) -> None:
    """Skip ``test_case`` (named, with the reason) when ``path`` is only a stand-in."""
    if is_stand_in(path):
        test_case.skipTest(
            f"transformers' tests/{path} at v{VERSION} unavailable ({provenance()[path]}); "
            "set HFV_TRANSFORMERS_REPO_TESTS to a transformers checkout's tests/ folder at that tag"
        )
