"""Directories and files that only the user running shiftnet may read.

Why: the state directory holds the store (every Route's TLS key, Secrets),
the router's certificates and HAProxy configuration, and generated
credentials. Any other local user must not read them, not even for the
moment between creating a file and fixing its mode: files are created 0600
from the start, written under a temporary name and renamed into place, and
directories are 0700. A directory left loose by an older version is
tightened (and logged) when shiftnet next opens it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from shiftnet.errors import ConfigError

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_TMP_PREFIX = ".tmp-private-"


def _loose(mode: int, private: int) -> bool:
    """Whether ``mode`` grants anything beyond ``private`` (group or other bits)."""
    return bool(stat.S_IMODE(mode) & ~private & 0o777)


def _refuse_shared(path: Path, st: os.stat_result) -> None:
    """Never take ``/``, a home directory or a sticky one such as ``/tmp`` away from others."""
    shared = bool(st.st_mode & stat.S_ISVTX)
    resolved = path.resolve()
    if shared or resolved == Path("/") or resolved == Path.home().resolve():
        raise ConfigError(
            f"directory {path} is shared with other files or users and cannot be made "
            "private: give shiftnet a directory of its own (--state-dir)"
        )


def ensure_private_dir(path: Path | str) -> Path:
    """Create ``path`` (and missing parents) as 0700, or tighten it if it exists.

    Parents that already exist keep their mode (they may be ``/tmp`` or a home
    directory); parents created here are 0700 too. Returns the path.
    """
    path = Path(path)
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    try:
        for directory in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, PRIVATE_DIR_MODE)
            os.chmod(directory, PRIVATE_DIR_MODE)
        st = path.stat()
        if not stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"state directory {path} exists and is not a directory")
        if _loose(st.st_mode, PRIVATE_DIR_MODE):
            _refuse_shared(path, st)
            os.chmod(path, PRIVATE_DIR_MODE)
            log.warning(
                "tightened a directory readable by other users path=%s mode=%o new_mode=%o",
                path,
                stat.S_IMODE(st.st_mode),
                PRIVATE_DIR_MODE,
            )
    except PermissionError as err:
        raise ConfigError(
            f"state directory {path} cannot be made private (mode 0700): {err.strerror}"
        ) from err
    return path


def write_private_file(path: Path | str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically, readable and writable by its owner only.

    The bytes go to a temporary file in the same directory, created 0600
    (``O_EXCL``, so never a file someone else prepared), flushed to disk and
    renamed over ``path``: a reader sees the old content or the new, and no
    other user can ever read either. The parent directory must exist.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.parent / f"{_TMP_PREFIX}{path.name}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def tighten_private_file(path: Path | str) -> bool:
    """Make an existing file 0600 if it grants more; True if it had to (and logs it)."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode) or not _loose(st.st_mode, PRIVATE_FILE_MODE):
        return False
    os.chmod(path, PRIVATE_FILE_MODE)
    log.warning(
        "tightened a file readable by other users path=%s mode=%o new_mode=%o",
        path,
        stat.S_IMODE(st.st_mode),
        PRIVATE_FILE_MODE,
    )
    return True


def tighten_private_tree(root: Path | str) -> int:
    """Make every directory under ``root`` 0700 and every regular file go-rwx.

    For a state directory written by an older version: files keep their
    owner's bits (an executable stays executable), groups and others lose
    all. Symbolic links are not followed. Returns how many entries changed.
    """
    root = Path(root)
    changed = 0
    for current, dirs, files in os.walk(root):
        for name in dirs:
            entry = Path(current) / name
            st = entry.lstat()
            if stat.S_ISDIR(st.st_mode) and _loose(st.st_mode, PRIVATE_DIR_MODE):
                os.chmod(entry, PRIVATE_DIR_MODE)
                changed += 1
        for name in files:
            entry = Path(current) / name
            st = entry.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
                os.chmod(entry, stat.S_IMODE(st.st_mode) & 0o700)
                changed += 1
    if changed:
        log.warning("tightened entries readable by other users path=%s count=%d", root, changed)
    return changed


def ensure_private_tree(path: Path | str) -> Path:
    """:func:`ensure_private_dir`, and if the directory was loose, tighten all it holds.

    A directory this version made is 0700 already, so the walk runs once: on
    the first start after an older version left it (and its files) readable.
    """
    path = Path(path)
    try:
        was_loose = _loose(path.stat().st_mode, PRIVATE_DIR_MODE)
    except FileNotFoundError:
        was_loose = False
    ensure_private_dir(path)
    if was_loose:
        try:
            tighten_private_tree(path)
        except PermissionError as err:
            raise ConfigError(
                f"directory {path} holds entries that cannot be made private: {err}"
            ) from err
    return path
