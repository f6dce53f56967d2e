"""Where HAProxy's sockets and pid file live, who owns them, and the clean-up after
routers that were killed.

Why an owner record: HAProxy runs in its own session so that a router that
dies (``kill -9``, the OOM killer) leaves traffic flowing and the next router
on the same work dir adopts it. But a HAProxy whose work dir is then removed
can never be adopted: it would hold its ports forever, and a short socket
directory outside the work dir (``/run/shiftnet-<uid>-<hash>``, ``/tmp`` when
``/run`` is not writable) would never be removed either. So every router owns
one such directory, named after its work dir (the socket directory itself
when the work dir is deep, else a directory holding only the record): while it
runs it holds an exclusive ``flock`` on ``owner`` there (the kernel drops it
when the process dies, however it dies) and records its pid, its work dir,
its socket directory and its HAProxy master's pid. At start a router looks at
the other directories of that exact name pattern, of its own uid, that have
an ``owner`` file nobody holds:

* its HAProxy is gone: the directory is removed;
* its HAProxy runs and its work dir still holds a configuration: it is left
  alone, for the router of that work dir to adopt;
* its HAProxy runs but its work dir is gone: nobody can adopt it, so it is
  stopped and the directory is removed.

A HAProxy is only ever signalled by a pid whose process is a live ``haproxy``
started on that very socket directory's master socket. A directory without an
``owner`` file is never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from shiftnet.errors import ShiftnetError
from shiftnet.router.haproxy.names import CONFIG_FILE

log = logging.getLogger(__name__)

SOCKET_PATH_MAX = 90  # HAProxy refuses unix socket paths over 97 bytes; leave room for names
OWNER_FILE = "owner"
PID_FILE = "haproxy.pid"
MASTER_SOCKET = "master.sock"
CLAIM_WAIT = 2.0  # seconds a start waits for a sweeping router to let go of its directory
STOP_WAIT = 5.0  # seconds an unadoptable HAProxy gets to stop before SIGKILL


class SocketDirError(ShiftnetError):
    """The short directory a router's sockets or owner record need is not its own."""


def socket_base() -> Path:
    """Where short socket directories go: ``/run`` for root, else ``/tmp``."""
    return Path("/run") if os.geteuid() == 0 and os.access("/run", os.W_OK) else Path("/tmp")


def _short_dir_name() -> re.Pattern[str]:
    return re.compile(rf"shiftnet-{os.geteuid()}-[0-9a-f]{{16}}")


def owner_dir(work_dir: Path) -> Path:
    """The short directory, named after ``work_dir``, that holds its router's owner record."""
    natural = Path(work_dir).resolve() / "run"
    digest = hashlib.sha256(str(natural).encode()).hexdigest()[:16]
    return socket_base() / f"shiftnet-{os.geteuid()}-{digest}"


def socket_dir(work_dir: Path) -> Path:
    """Where HAProxy's unix sockets live: ``<work_dir>/run``, or, when that path is too
    long for a socket (deep state directories), the short :func:`owner_dir`."""
    natural = Path(work_dir).resolve() / "run"
    if len(str(natural)) + len("/fe_sni.sock") <= SOCKET_PATH_MAX:
        return natural
    return owner_dir(work_dir)


def master_pid(run_dir: Path, recorded: int | None = None) -> int | None:
    """The pid of the live HAProxy master started on ``run_dir``: the one its pid file
    names or, when that is gone with its directory, the one ``recorded``.

    A pid alone is no proof (pids are reused): the process must be a haproxy,
    not a zombie, whose command line names this directory's master socket.
    """
    candidates = [recorded] if recorded else []
    with contextlib.suppress(OSError, ValueError, IndexError):
        candidates.insert(0, int((run_dir / PID_FILE).read_text().split()[0]))
    needle = str(run_dir / MASTER_SOCKET).encode()
    for pid in candidates:
        try:
            proc_stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if proc_stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
            continue
        if cmdline.split(b"\0")[0].endswith(b"haproxy") and needle in cmdline:
            return pid
    return None


class SocketDirClaim:
    """This router's hold on its owner directory: an ``flock`` on ``owner`` and the record."""

    def __init__(self, directory: Path, fd: int | None, record: dict[str, object]) -> None:
        self.directory = directory
        self._fd = fd
        self._record = record

    @property
    def held(self) -> bool:
        return self._fd is not None

    def record_master(self, pid: int) -> None:
        """Remember the HAProxy master (found again even when its pid file is gone)."""
        if self._fd is None or self._record.get("haproxy_pid") == pid:
            return
        self._record["haproxy_pid"] = pid
        _write_record(self._fd, self._record)

    def release(self) -> None:
        """Let go (the record stays: it names the work dir of a HAProxy left running)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """A clean stop: the record and its directory go, then the lock."""
        if self._fd is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.release()


def claim(work_dir: Path, run_dir: Path) -> SocketDirClaim:
    """Create ``work_dir``'s owner directory (0700) if needed, hold its ``owner`` lock and
    record who owns it and where its sockets are.

    A router sweeping this directory holds the lock for a moment: wait up to
    ``CLAIM_WAIT``. A lock still held then belongs to a live router on the same
    work dir; this one goes on without it (the sweeper skips held directories).
    """
    directory = owner_dir(work_dir)
    record: dict[str, object] = {
        "pid": os.getpid(),
        "work_dir": str(Path(work_dir).resolve()),
        "run_dir": str(run_dir),
    }
    deadline = time.monotonic() + CLAIM_WAIT
    while True:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _insist_own(directory)
        path = directory / OWNER_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                log.warning("socket dir held by another router path=%s", directory)
                return SocketDirClaim(directory, None, record)
            time.sleep(0.05)
            continue
        if not _still_linked(fd, path):  # a sweeper removed it between open and lock
            os.close(fd)
            continue
        _write_record(fd, record)
        return SocketDirClaim(directory, fd, record)


def _insist_own(directory: Path) -> None:
    """The name is predictable (and ``/tmp`` shared): use it only when it is a real
    directory of this user, and private."""
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise SocketDirError(
            f"socket directory {directory} is not a directory of this user (uid "
            f"{os.geteuid()}): remove it, or give the router another work dir"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)


def _write_record(fd: int, record: dict[str, object]) -> None:
    data = json.dumps(record, sort_keys=True).encode() + b"\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _still_linked(fd: int, path: Path) -> bool:
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


@dataclass(frozen=True)
class Sweep:
    """What a sweep did: directories removed, HAProxies stopped, HAProxies kept for adoption."""

    removed: tuple[Path, ...] = ()
    stopped: tuple[int, ...] = ()
    kept: tuple[tuple[int, Path], ...] = ()  # (master pid, work dir) left to be adopted


def sweep_stale(keep: Path, base: Path | None = None) -> Sweep:
    """Clean up the socket directories of killed routers (see the module docstring).

    ``keep`` is the caller's own directory: its HAProxy is the caller's to adopt.
    """
    base = socket_base() if base is None else base
    pattern = _short_dir_name()
    removed: list[Path] = []
    stopped: list[int] = []
    kept: list[tuple[int, Path]] = []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return Sweep()
    for entry in entries:
        path = Path(entry.path)
        if not pattern.fullmatch(entry.name) or path == keep:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        outcome = _sweep_one(path)
        if outcome is None:
            continue
        pid, work_dir, gone = outcome
        if gone:
            removed.append(path)
            if pid is not None:
                stopped.append(pid)
        elif pid is not None:
            kept.append((pid, work_dir))
    return Sweep(tuple(removed), tuple(stopped), tuple(kept))


def _sweep_one(directory: Path) -> tuple[int | None, Path, bool] | None:
    """``(master pid, work dir, removed)`` for an unowned directory; None when not ours to
    judge (no owner record, or its owner is alive)."""
    path = directory / OWNER_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no record: not ours, or a router is just creating it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its router is alive
        try:
            record = json.loads(os.pread(fd, 4096, 0) or b"{}")
            work_dir = Path(str(record["work_dir"]))
            run_dir = Path(str(record.get("run_dir", directory)))
            recorded = record.get("haproxy_pid")
        except (ValueError, KeyError, TypeError, AttributeError):
            return None  # a record this code did not write: leave the directory alone
        pid = master_pid(run_dir, recorded if isinstance(recorded, int) else None)
        if pid is not None and (work_dir / "conf" / CONFIG_FILE).exists():
            log.info(
                "haproxy of a stopped router kept for adoption master_pid=%d work_dir=%s",
                pid,
                work_dir,
            )
            return pid, work_dir, False
        if pid is not None:
            _stop_master(pid, run_dir)
            log.warning(
                "haproxy of a killed router stopped master_pid=%d work_dir=%s (gone)",
                pid,
                work_dir,
            )
        shutil.rmtree(directory, ignore_errors=True)
        log.info("stale socket dir removed path=%s", directory)
        return pid, work_dir, True
    finally:
        os.close(fd)


def _stop_master(pid: int, run_dir: Path) -> None:
    """SIGTERM the master (it stops its workers), SIGKILL it if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT
    while time.monotonic() < deadline and master_pid(run_dir, pid) == pid:
        time.sleep(0.02)
    if master_pid(run_dir, pid) == pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
