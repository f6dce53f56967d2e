"""Run a pod's command with the pod's own /etc/resolv.conf, /etc/hosts and hostname.

Pods in local mode share the node's files, so the agent starts each pod
process through this small program (run as a script: standard library only,
nothing of shiftnet imported, so it starts in milliseconds)::

    python3 -I -S podetc.py RESOLV_CONF HOSTS HOSTNAME -- COMMAND [ARG...]

It enters a new mount and UTS namespace (root, or an unprivileged user
namespace that maps the user to itself), bind-mounts the two files over
/etc/resolv.conf and /etc/hosts, sets the hostname and ``exec``\\ s the
command, so the pid the agent recorded is the command's. Where the kernel
refuses the namespaces it says so on stderr (the container's log) and runs
the command as it is; the search path and options still reach glibc through
``LOCALDOMAIN`` and ``RES_OPTIONS``.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _map_user_to_itself(uid: int, gid: int) -> None:
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def enter(resolv_conf: str, hosts: str, hostname: str) -> None:
    """Become a process whose /etc/resolv.conf, /etc/hosts and hostname are the pod's."""
    libc = _libc()
    flags = CLONE_NEWNS | CLONE_NEWUTS
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    _check(libc.unshare(flags), "unshare")
    if uid != 0:
        _map_user_to_itself(uid, gid)
    # nothing mounted here may leak back to the node
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    for source, target in ((resolv_conf, "/etc/resolv.conf"), (hosts, "/etc/hosts")):
        _check(
            libc.mount(source.encode(), target.encode(), None, MS_BIND, None),
            f"mount --bind {source} {target}",
        )
    socket.sethostname(hostname)


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: podetc.py RESOLV_CONF HOSTS HOSTNAME -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    resolv_conf, hosts, hostname, command = argv[0], argv[1], argv[2], argv[4:]
    try:
        enter(resolv_conf, hosts, hostname)
    except OSError as exc:
        print(
            f"shiftnet: the pod's resolv.conf and hosts are not in place ({exc}); "
            "running with the node's",
            file=sys.stderr,
            flush=True,
        )
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"shiftnet: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
