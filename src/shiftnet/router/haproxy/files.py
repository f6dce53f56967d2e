"""Write a rendered HAProxy file set into a directory, atomically and only when changed.

Why: HAProxy must never read a half-written file, and a file whose bytes did
not change must not be touched (its mtime stays, and the driver can tell "no
change, no reload"). Each file is written to a temporary name in the same
directory, flushed to disk and renamed over the old one; files the new set no
longer contains are removed. The directory belongs to the router alone.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from shiftnet.errors import ConfigError

_TMP_PREFIX = ".tmp-"


@dataclass
class WriteResult:
    """Which files a write changed, added or removed (sorted names)."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed)


def _check_name(name: str) -> None:
    """A rendered file name is one plain path component (sub-directories allowed, no escape)."""
    parts = name.split("/")
    if not parts or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"rendered file name {name!r} is not a plain relative path")
    if any(p.startswith(_TMP_PREFIX) for p in parts):
        raise ConfigError(f"rendered file name {name!r} uses the reserved prefix {_TMP_PREFIX}")


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.parent / f"{_TMP_PREFIX}{path.name}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _existing(directory: Path) -> set[str]:
    found: set[str] = set()
    if not directory.is_dir():
        return found
    for root, _dirs, files in os.walk(directory):
        for name in files:
            found.add(str((Path(root) / name).relative_to(directory)))
    return found


def _mode_for(name: str) -> int:
    """Readable by the router's user only: .pem files hold keys, haproxy.cfg the stats
    password, and the maps tell every host the router serves."""
    return 0o600


def write_file_set(
    directory: Path, files: dict[str, bytes], known: dict[str, bytes] | None = None
) -> WriteResult:
    """Make ``directory`` hold exactly ``files`` (name -> bytes); return what changed.

    ``known`` is what the caller last wrote there (the driver owns the
    directory): files equal to it are neither read nor written, and only its
    names can need removing, so 10,000 route certificates cost nothing when
    one route changes.
    """
    directory = Path(directory)
    for name in files:
        _check_name(name)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # keys and the stats password
    result = WriteResult()
    for name in sorted(files):
        path = directory / name
        data = files[name]
        if known is not None and name in known and known[name] == data:
            continue
        try:
            if path.read_bytes() == data:
                continue
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass
        _write_atomic(path, data, _mode_for(name))
        result.written.append(name)
    present = set(known) if known is not None else _existing(directory)
    for name in sorted(present - set(files)):
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
        result.removed.append(name)
    if known is not None and not result.removed:
        return result
    # Drop sub-directories the new set emptied (deepest first).
    for root, dirs, _files in sorted(os.walk(directory), key=lambda t: -len(t[0])):
        for d in dirs:
            with contextlib.suppress(OSError):
                (Path(root) / d).rmdir()
    return result


def read_file_set(directory: Path) -> dict[str, bytes]:
    """The file set currently in ``directory`` (for adoption and tests)."""
    directory = Path(directory)
    return {name: (directory / name).read_bytes() for name in sorted(_existing(directory))}
