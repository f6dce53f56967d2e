"""Run a command as ``nobody`` (from a root test), optionally where the kernel refuses
user namespaces.

The refusal is real and local: the command runs in a user namespace of its own
(every uid mapped to itself, so files look the same) whose
``user.max_user_namespaces`` is 0, so an ``unshare(CLONE_NEWUSER)`` inside fails
with ENOSPC, as on a host that turned unprivileged user namespaces off. The host's
own limit is never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

NOBODY = 65534
# The project's venv may live under root's private home; nobody runs the system's.
SYSTEM_PYTHON = "/usr/bin/python3"

_REFUSING = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
    raise OSError(ctypes.get_errno(), "unshare")
print("mapped?", flush=True)
sys.stdin.readline()
with open("/proc/sys/user/max_user_namespaces", "w") as f:
    f.write("0")
os.setgroups([])
os.setgid(int(sys.argv[1]))
os.setuid(int(sys.argv[1]))
os.execve(sys.argv[2], sys.argv[2:], os.environ)
"""


def run_as_nobody(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    refuse_user_namespaces: bool = False,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """``argv`` (an absolute program path) as uid/gid 65534, output captured."""
    if not refuse_user_namespaces:
        return subprocess.run(
            list(argv), env=dict(env), user=NOBODY, group=NOBODY, extra_groups=[],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", _REFUSING, str(NOBODY), *argv],
        env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline().strip() != "mapped?":
            raise RuntimeError(f"could not enter a user namespace: {proc.communicate()[1]}")
        for name in ("uid_map", "gid_map"):  # root outside may map every id to itself
            with open(f"/proc/{proc.pid}/{name}", "w") as f:
                f.write("0 0 4294967295")
        out, err = proc.communicate("go\n", timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def can_run_as_nobody() -> bool:
    return os.geteuid() == 0 and os.access(SYSTEM_PYTHON, os.X_OK)
