"""Atomic saves of folders: write everything into a temporary folder beside the target, then move
it into place with renames, so a crash, a kill or a full disk while writing leaves the previous
content of the target as it was.

    with staged_directory("outputs/model") as staging:
        model.save_pretrained(staging)          # any exception here: the target is untouched

How the finished staging folder is moved into place (`publish`):

- the target does not exist: one `rename` (atomic);
- the target holds nothing but files the new save replaces (plus files `stale` marks as left
  over from an older save, e.g. old weight shards) and other plain files, which are hard-linked
  into the staging folder first: the two folders are swapped in one step (Linux
  `renameat2(RENAME_EXCHANGE)`; elsewhere two renames, between which the target name is briefly
  absent while the old folder stays whole beside it), then the old folder is deleted;
- the target also holds sub-folders the save does not write (a Trainer output_dir with its
  `checkpoint-*` folders): each new file replaces its old one with `os.replace`. Every file is
  complete before the first replace, so only a kill within the few microseconds of these renames
  (no data is written then) can mix old and new files.

Files are fsync'ed before the move and the folders after it, so a power loss does not publish
empty files. Nothing here imports beyond the standard library: the module is safe to use from
the model save hook and the example scripts alike.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

STAGING_MARK = ".hfv-staging"  # in the names of temporary folders; resume and push skip them


def staging_path(target: Path, tag: str | None = None) -> Path:
    """The temporary folder beside ``target``: hidden, named after it. ``tag`` gives a fixed name
    (several processes writing one folder must agree on it); default: unique to this call."""
    tag = tag or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    return target.parent / f".{target.name}{STAGING_MARK}-{tag}"


def is_staging_name(name: str) -> bool:
    return name.startswith(".") and STAGING_MARK in name


@contextlib.contextmanager
def staged_directory(
    target: str | os.PathLike, *, stale: Callable[[str], bool] | None = None, tag: str | None = None
) -> Iterator[Path]:
    """Yields an empty folder beside ``target``; on a clean exit its content is published into
    ``target`` (see the module docstring); on an exception it is deleted and ``target`` is left
    as it was.

    Args:
        target: the folder being saved (created if missing).
        stale: names in ``target`` that the new save makes obsolete (deleted when publishing, as
            ``save_pretrained`` deletes weight shards of an older save).
        tag: a fixed staging name shared by processes that write into it together; a leftover
            folder of that name (from a killed run) is removed first.
    """
    target = Path(os.path.realpath(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_path(target, tag)
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        yield staging
        publish(staging, target, stale=stale)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def publish(staging: Path, target: Path, *, stale: Callable[[str], bool] | None = None) -> None:
    """Move the complete folder ``staging`` into ``target`` (see the module docstring)."""
    staging, target = Path(staging), Path(target)
    _fsync_tree(staging)
    if not target.exists():
        os.rename(staging, target)
        _fsync_directory(target.parent)
        return
    if not target.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "cannot save a folder over a file", str(target))
    new_names = set(os.listdir(staging))
    kept = [name for name in os.listdir(target) if name not in new_names and not (stale and stale(name))]
    kept = [name for name in kept if not is_staging_name(name)]
    only_plain_files = all(os.path.isfile(target / name) and not os.path.islink(target / name) for name in kept)
    if only_plain_files and not _is_working_directory_within(target) and _link_all(target, staging, kept):
        old = _exchange(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        for name in sorted(new_names):
            _replace(staging / name, target / name)
        for name in os.listdir(target):
            if name not in new_names and stale and stale(name):
                _remove(target / name)
        os.rmdir(staging)
    _fsync_directory(target)
    _fsync_directory(target.parent)


def _is_working_directory_within(folder: Path) -> bool:
    """Swapping the folder this process works in would leave it in the deleted old one."""
    try:
        cwd = Path(os.path.realpath(os.getcwd()))
    except FileNotFoundError:
        return False
    return cwd == folder or folder in cwd.parents


def _link_all(source: Path, destination: Path, names: list[str]) -> bool:
    """Hard-link ``names`` from ``source`` into ``destination``; False (links undone) where the
    filesystem has no hard links."""
    done = []
    try:
        for name in names:
            os.link(source / name, destination / name)
            done.append(name)
    except OSError:
        for name in done:
            os.unlink(destination / name)
        return False
    return True


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(new: Path, target: Path) -> Path:
    """Swap the folders ``new`` and ``target``; returns the path now holding the old folder."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE) == 0:
            return new
        if ctypes.get_errno() not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(target))
    old = new.with_name(new.name + "-old")
    os.rename(target, old)
    os.rename(new, target)
    return old


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - platforms without a C library handle
        return None


def _replace(source: Path, destination: Path) -> None:
    if source.is_dir() and destination.is_dir() and not destination.is_symlink():
        shutil.rmtree(_exchange(source, destination), ignore_errors=True)
    else:
        if destination.is_dir() and not destination.is_symlink():
            shutil.rmtree(destination)
        os.replace(source, destination)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _fsync_tree(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                _fsync_file(path)
        _fsync_directory(Path(folder))


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open folders (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def remove_leftover_staging(folder: str | os.PathLike, prefix: str = ".") -> list[str]:
    """Delete the temporary folders (names starting with ``prefix``) a killed save left in
    ``folder``; returns their names."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed = sorted(name for name in os.listdir(folder) if is_staging_name(name) and name.startswith(prefix))
    for name in removed:
        shutil.rmtree(folder / name, ignore_errors=True)
    if removed:
        logger.warning("removed temporary folders left by an interrupted save in %s: %s", folder, ", ".join(removed))
    return removed


def save_atomically(saveable, folder: str | os.PathLike, **kwargs) -> None:
    """``saveable.save_pretrained(folder, **kwargs)`` (a tokenizer, a processor, a config) through a
    staging folder: the folder's previous files stay as they were if the save fails."""
    with staged_directory(folder) as staging:
        saveable.save_pretrained(staging, **kwargs)


def replace_atomically(path: str | os.PathLike, write: Callable[[str], object]) -> None:
    """``write(temporary_path)`` writes the whole file beside ``path``; then it replaces ``path``
    in one rename. If ``write`` fails, ``path`` is as it was."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}{STAGING_MARK}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        write(str(temporary))
        _fsync_file(str(temporary))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write a whole UTF-8 text file, or leave the old one."""
    replace_atomically(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
