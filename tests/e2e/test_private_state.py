"""The state directory is private: after ``shiftnet apply`` and ``shiftnet up`` every file
holding keys, credentials or store data is 0600, in 0700 directories; a state directory
left readable by an older version is tightened at the next start."""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.cli import Shiftnet
from tests.support.ports import free_cluster_network, free_port
from tests.support.router import kill_haproxy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
SHIFTNET = Path(sys.executable).parent / "shiftnet"
DEMO = REPO / "examples" / "demo"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _secret(path: Path, needles: tuple[bytes, ...]) -> bool:
    """Whether a file holds key material, a credential or store data (by its content)."""
    if path.name.endswith(("-wal", "-shm", "-journal")):
        return True
    data = path.read_bytes()
    if data.startswith(b"SQLite format 3") or b"PRIVATE KEY-----" in data:
        return True
    return any(n in data for n in needles)


def loose_secrets(state: Path, needles: tuple[bytes, ...] = ()) -> list[str]:
    """Every file with secrets that is not 0600, and every directory leading to one that is
    not 0700 (the state directory included)."""
    bad = []
    if _mode(state) != 0o700:
        bad.append(f"{state} {_mode(state):o}")
    for root, _dirs, files in os.walk(state):
        for name in files:
            path = Path(root) / name
            if not path.is_file() or not _secret(path, needles):
                continue
            if _mode(path) != 0o600:
                bad.append(f"{path} {_mode(path):o}")
            for parent in path.relative_to(state).parents:
                d = state / parent
                if _mode(d) != 0o700:
                    bad.append(f"{d} {_mode(d):o}")
    return sorted(set(bad))


def secret_files(state: Path, needles: tuple[bytes, ...] = ()) -> list[Path]:
    out = []
    for root, _dirs, files in os.walk(state):
        out += [Path(root) / n for n in files if _secret(Path(root) / n, needles)]
    return out


def loosen(state: Path) -> None:
    """What an older shiftnet left: 0755 directories and 0644 files."""
    for root, dirs, files in os.walk(state):
        for name in dirs:
            (Path(root) / name).chmod(0o755)
        for name in files:
            path = Path(root) / name
            if path.is_file() and not path.is_symlink():
                path.chmod(0o644)
    state.chmod(0o755)


@pytest.fixture
def common_umask():
    old = os.umask(0o022)  # the usual umask: without care, files would be 0644
    try:
        yield
    finally:
        os.umask(old)


def test_apply_into_a_fresh_state_dir(tmp_path: Path, common_umask: None) -> None:
    state = tmp_path / "home" / "state"
    cli = Shiftnet(store=f"sqlite:///{state}/state.db", home=state)
    cli.ok("apply", "-f", str(DEMO))
    assert "route.route.openshift.io/" in cli.ok("get", "routes", "-A", "-o", "name")
    assert any(p.name == "state.db" for p in secret_files(state))
    assert loose_secrets(state) == []


def test_older_loose_state_dir_is_tightened_and_logged(tmp_path: Path, common_umask: None) -> None:
    state = tmp_path / "state"
    cli = Shiftnet(store=f"sqlite:///{state}/state.db", home=state)
    cli.ok("apply", "-f", str(DEMO))
    loosen(state)
    assert loose_secrets(state) != []
    res = cli.run("get", "routes", "-A")
    assert res.returncode == 0, res.stderr
    assert "tightened" in res.stderr and str(state) in res.stderr
    assert loose_secrets(state) == []
    # Once private, nothing more is said.
    again = cli.run("get", "routes", "-A")
    assert again.returncode == 0 and "tightened" not in again.stderr


class Up:
    """``shiftnet up`` in its own session; stopped like Ctrl-C, killed if it will not."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(SHIFTNET), *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []

    def read_until(self, pattern: str, timeout: float) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if re.search(pattern, line):
                return
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines))

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def test_up_keeps_store_router_files_and_stats_password_private(
    tmp_path: Path, common_umask: None
) -> None:
    state = tmp_path / "state"
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(state)
    env["SHIFTNET_CLUSTERS_DIR"] = str(tmp_path / "clusters")  # not the machine's registry
    env["ROUTER_SERVICE_HTTP_PORT"] = str(free_port())
    env["ROUTER_SERVICE_HTTPS_PORT"] = str(free_port())
    env["STATS_PORT"] = str(free_port())
    env["SHIFTNET_DNS_LISTEN"] = f"127.0.0.1:{free_port()}"
    env["SHIFTNET_API_LISTEN"] = f"127.0.0.1:{free_port()}"  # never the host's 6443
    env.pop("STATS_USERNAME", None)
    env.pop("STATS_PASSWORD", None)
    net = free_cluster_network()  # apart from pods of tests running beside this one
    args = ["up", "-f", str(demo), "--node-name", "private", "--wait", "20"]
    args += ["--cluster-network", net]
    work = state / "router-router"
    try:
        first = Up(args, tmp_path, env)
        try:
            first.read_until(r"Press Ctrl-C", timeout=120)
            out = "\n".join(first.lines)
            shown = re.search(
                r"router stats: http://127\.0\.0\.1:\d+/ user admin password (\S+)", out
            )
            assert shown, out
            password = shown.group(1)
            needles = (password.encode(),)
            # Route certificates reach conf/ once HAProxy reloads with them.
            deadline = time.monotonic() + 30
            while not list(work.glob("conf/certs/*.pem")) and time.monotonic() < deadline:
                time.sleep(0.2)
            names = {str(p.relative_to(state)) for p in secret_files(state, needles)}
            expected = {
                "state.db",  # every Route's spec.tls.key
                "state.db-wal",
                "router-router/stats-credentials",
                "router-router/default-certificate.pem",
                "router-router/conf/haproxy.cfg",  # stats auth
            }
            assert expected <= names, names
            assert any(n.startswith("router-router/conf/certs/") for n in names), names
            assert loose_secrets(state, needles) == []
        finally:
            first.stop()
        creds = work / "stats-credentials"
        assert creds.read_text() == f"admin:{password}\n"

        # An older version's loose state directory: the next start tightens it and
        # keeps the stats password, which it does not print again.
        loosen(state)
        second = Up(args, tmp_path, env)
        try:
            second.read_until(r"Press Ctrl-C", timeout=120)
            assert loose_secrets(state, needles) == []
        finally:
            second.stop()
        out = "\n".join(second.lines)
        assert password not in out, out
        assert (
            f"router stats: http://127.0.0.1:{env['STATS_PORT']}/ (user admin, password in" in out
        )
        assert creds.read_text() == f"admin:{password}\n"
    finally:
        kill_haproxy(work)
