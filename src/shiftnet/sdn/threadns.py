"""Network namespaces entered by one thread, without forking a helper process.

pyroute2's ``NetNS`` and ``netns.create`` fork a helper per call (about 20 ms
each here), which alone would blow the 50 ms budget for a pod's network.
``setns(2)`` with ``CLONE_NEWNET`` changes only the calling thread, and a
netlink socket stays bound to the namespace it was opened in: so a thread
steps into the namespace, opens its socket, and steps back (about 1 ms).
Creating a namespace is the same trick as ``ip netns add``: unshare the
thread's network namespace and bind-mount it onto ``/var/run/netns/NAME``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
from collections.abc import Iterator

from shiftnet.errors import ShiftnetError

NETNS_DIR = "/var/run/netns"
CLONE_NEWNET = 0x40000000
MS_BIND = 4096
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_libc = ctypes.CDLL(None, use_errno=True)


class NamespaceError(ShiftnetError):
    """A network namespace could not be entered or created."""


def path_of(name: str) -> str:
    if not _NAME.match(name):
        raise NamespaceError(f'network namespace name "{name}" is invalid')
    return f"{NETNS_DIR}/{name}"


def _call(what: str, rc: int) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise NamespaceError(f"{what}: {os.strerror(err)}")


@contextlib.contextmanager
def entered(name: str) -> Iterator[None]:
    """The calling thread is inside network namespace ``name`` for the block."""
    target = os.open(path_of(name), os.O_RDONLY | os.O_CLOEXEC)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _call(f"setns {name}", _libc.setns(target, CLONE_NEWNET))
        try:
            yield
        finally:
            _call("setns back", _libc.setns(home, CLONE_NEWNET))
    finally:
        os.close(target)
        os.close(home)


def create(name: str) -> bool:
    """``ip netns add name`` (idempotent), from a thread of this process; True if new."""
    path = path_of(name)
    if os.path.exists(path):
        return False
    os.makedirs(NETNS_DIR, exist_ok=True)
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444))
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            _call("unshare", _libc.unshare(CLONE_NEWNET))
            try:
                _call(
                    f"bind mount {path}",
                    _libc.mount(b"/proc/thread-self/ns/net", path.encode(), b"none", MS_BIND, None),
                )
            finally:
                _call("setns back", _libc.setns(home, CLONE_NEWNET))
        except NamespaceError:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
    finally:
        os.close(home)
    return True
