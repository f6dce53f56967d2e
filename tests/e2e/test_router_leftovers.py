"""What a ``shiftnet router`` killed with SIGKILL leaves behind, and what the next start does
with it: HAProxy keeps serving and is adopted while its state directory exists; once that
is gone, the next router of any state directory stops it and removes its socket directory.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET, Shiftnet
from tests.support.leftovers import check_no_haproxy_left, stop_haproxy_of, stop_up
from tests.support.ports import free_port
from tests.support.router import haproxy_pids_using

from shiftnet.router.haproxy.held_ports import listening_ports, process_tree
from shiftnet.router.haproxy.socket_dirs import (
    OWNER_FILE,
    master_pid,
    owner_dir,
    socket_base,
    socket_dir,
    sweep_stale,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


class Router:
    """One ``shiftnet router`` on a state directory of its own, on free loopback ports."""

    def __init__(self, root: Path, name: str, deep: bool = True) -> None:
        # deep: HAProxy's sockets live in a short directory outside the state directory;
        # else in it (<home>/router-router/run), and only the owner record is outside
        self.home = root / name / ("d" * 64) if deep else Path(tempfile.mkdtemp(dir="/tmp"))
        self.sn = Shiftnet(f"sqlite://{root}/{name}.db", self.home)
        self.work_dir = self.home / "router-router"
        self.proc: subprocess.Popen[str] | None = None
        self.ports = {p: free_port() for p in ("http", "https", "stats")}

    @property
    def run_dir(self) -> Path:
        return socket_dir(self.work_dir)

    def command(self) -> list[str]:
        flags = [f"--{name}-port={port}" for name, port in self.ports.items()]
        return [SHIFTNET, "--store", self.sn.store, "router", *flags, "--bind-address=127.0.0.1",
                f"--metrics-listen=127.0.0.1:{free_port()}"]  # fmt: skip

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.command(),
            env=self.sn.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline()
        assert "serving http" in line, (line, self.proc.stderr.read())

    def master(self) -> int:
        pid = master_pid(self.run_dir)
        assert pid is not None, f"no HAProxy master for {self.run_dir}"
        return pid

    def kill(self) -> None:
        """``kill -9``, as the OOM killer does: HAProxy lives on."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=10) == -signal.SIGKILL
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def stop(self) -> None:
        if self.proc is not None:
            stop_up(self.proc, self.home)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
        stop_haproxy_of(self.home)


@pytest.fixture
def routers(tmp_path: Path) -> Iterator[list[Router]]:
    made: list[Router] = []
    try:
        yield made
    finally:
        for router in made:
            router.stop()


def gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_killed_routers_leftovers_are_adopted_or_cleaned_at_the_next_start(
    tmp_path: Path, routers: list[Router]
) -> None:
    orphaned, dead, parked, fresh = (Router(tmp_path, n) for n in ("a", "b", "c", "d"))
    shallow = Router(tmp_path, "e", deep=False)
    routers.extend([orphaned, dead, parked, fresh, shallow])
    for router in (orphaned, dead, parked, shallow):
        router.start()
        assert (owner_dir(router.work_dir) / OWNER_FILE).stat().st_mode & 0o777 == 0o600
        assert owner_dir(router.work_dir).parent == socket_base()
    assert orphaned.run_dir == owner_dir(orphaned.work_dir)
    assert shallow.run_dir == shallow.work_dir / "run"
    orphan_pid, dead_pid, parked_pid = orphaned.master(), dead.master(), parked.master()
    shallow_pid = shallow.master()
    for router in (orphaned, dead, parked, shallow):
        router.kill()
    # a and e: their state directories are removed (rm -rf, a temporary directory
    # cleaned up), pid files and, for e, the sockets with them: nobody can adopt
    # their HAProxy any more
    subprocess.run(["rm", "-rf", str(orphaned.home), str(shallow.home)], check=True)
    # b: the OOM killer took its HAProxy too; only the socket directory is left
    os.kill(dead_pid, signal.SIGKILL)
    assert gone(dead_pid)
    # c: killed, state kept: its HAProxy serves on, to be adopted
    assert not gone(parked_pid, timeout=0.5)
    # a directory of the same name pattern without an owner record is not ours to judge
    foreign = socket_base() / f"shiftnet-{os.geteuid()}-{secrets.token_hex(8)}"
    foreign.mkdir(mode=0o700)
    (foreign / "haproxy.pid").write_text(f"{os.getpid()}\n")
    try:
        fresh.start()  # another state directory
        assert gone(orphan_pid), "the unadoptable HAProxy of a killed router still runs"
        assert gone(shallow_pid), "the HAProxy whose sockets went with its state still runs"
        assert not orphaned.run_dir.exists()
        assert not owner_dir(shallow.work_dir).exists()
        assert not dead.run_dir.exists()
        assert parked.run_dir.exists() and not gone(parked_pid, timeout=0.5)
        assert foreign.exists() and (foreign / "haproxy.pid").exists()
        # the router of c's state directory adopts its HAProxy
        parked.start()
        assert parked.master() == parked_pid
    finally:
        subprocess.run(["rm", "-rf", str(foreign)], check=True)


def test_the_e2e_check_fails_a_test_that_leaves_haproxy_running(
    tmp_path: Path, routers: list[Router]
) -> None:
    router = Router(tmp_path, "leaky")
    routers.append(router)
    router.start()
    pid = router.master()
    router.kill()  # what a test's clean-up by SIGKILL alone used to leave
    with pytest.raises(AssertionError, match=rf"left HAProxy running \(pids \[.*{pid}"):
        check_no_haproxy_left(tmp_path)
    assert gone(pid)
    check_no_haproxy_left(tmp_path)  # and it stopped what it found


def test_ports_served_by_a_killed_routers_haproxy_are_refused_with_its_pid(
    tmp_path: Path, routers: list[Router]
) -> None:
    """HAProxy binds with SO_REUSEPORT: a second one on the same ports would start, and
    the kernel would split the connections between the two configurations."""
    killed, other = Router(tmp_path, "killed"), Router(tmp_path, "other")
    routers.extend([killed, other])
    other.ports = dict(killed.ports)  # the user starts another state on the same ports
    killed.start()
    pid = killed.master()
    killed.kill()
    res = subprocess.run(
        other.command(), env=other.sn.env(), capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    line = res.stderr.strip().splitlines()[-1]  # after the router's log lines
    ports = ", ".join(str(p) for p in sorted(killed.ports.values()))
    assert line.startswith(
        f"error: ports {ports} are served by HAProxy (pid {pid}) left running by a router "
        f"that was killed, with work dir {killed.work_dir}: start the router on that state "
        f"directory again to adopt it, or stop it with `kill {pid}`"
    ), line
    assert not haproxy_pids_using(other.home), "a second HAProxy was started"
    assert not gone(pid, timeout=0.5)  # its state is kept: it serves on, to be adopted


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_the_sweep_touches_only_unlocked_owner_records_of_its_own_name_pattern(
    tmp_path: Path,
) -> None:
    """Safety rules of the clean-up, on a base directory of the test's own."""
    base = tmp_path / "base"
    base.mkdir()
    uid = os.geteuid()

    def owned(name: str, record: bytes) -> Path:
        directory = base / name
        directory.mkdir(mode=0o700)
        (directory / OWNER_FILE).write_bytes(record)
        return directory

    record = b'{"pid": 1, "work_dir": "/nonexistent/router-router"}'
    stale = owned(f"shiftnet-{uid}-{'a' * 16}", record)
    live = owned(f"shiftnet-{uid}-{'b' * 16}", record)
    garbled = owned(f"shiftnet-{uid}-{'c' * 16}", b"not a record")
    other_uid = owned(f"shiftnet-{uid + 1}-{'d' * 16}", record)
    longer = owned(f"shiftnet-{uid}-{'e' * 17}", record)
    unrecorded = base / f"shiftnet-{uid}-{'f' * 16}"
    unrecorded.mkdir()
    target = owned("elsewhere", record)
    (base / f"shiftnet-{uid}-{'0' * 16}").symlink_to(target)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(live / OWNER_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        swept = sweep_stale(keep=base / "mine", base=base)
    finally:
        holder.kill()
        holder.wait()
    assert swept.removed == (stale,)
    assert swept.stopped == () and swept.kept == ()
    for untouched in (live, garbled, other_uid, longer, unrecorded, target):
        assert untouched.is_dir(), untouched
    assert (target / OWNER_FILE).exists()
    # the lock's owner is gone now: its directory goes at the next sweep
    assert sweep_stale(keep=base / "mine", base=base).removed == (live,)


def test_listening_ports_are_read_from_a_process_own_sockets() -> None:
    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6, socket.socket() as idle:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::1", 0))
        v6.listen()
        idle.bind(("127.0.0.1", 0))  # bound, not listening
        ports = listening_ports([os.getpid()])
        assert v4.getsockname()[1] in ports
        assert v6.getsockname()[1] in ports
        assert idle.getsockname()[1] not in ports
    assert os.getpid() in process_tree(os.getpid())


def test_a_socket_dir_name_taken_by_a_symlink_is_refused(
    tmp_path: Path, routers: list[Router]
) -> None:
    """The short name is predictable (``/tmp`` is shared): never follow what is there."""
    router = Router(tmp_path, "planted")
    routers.append(router)
    planted = owner_dir(router.work_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted.symlink_to(elsewhere)
    try:
        res = subprocess.run(
            router.command(), env=router.sn.env(), capture_output=True, text=True, timeout=30
        )
    finally:
        planted.unlink()
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"error: socket directory {planted} is not a directory of this user "
        f"(uid {os.geteuid()}): remove it, or give the router another work dir"
    )
    assert list(elsewhere.iterdir()) == []
    assert not haproxy_pids_using(router.home)
