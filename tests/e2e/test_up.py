"""``shiftnet up`` as a user runs it: a subprocess, the demo, curl, then Ctrl-C.

The demo directory is copied elsewhere first, so the test also shows that pod
commands work from any checkout directory (``shiftnet.io/workdir: "."``).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from shiftnet.sdn.pidfiles import process_start_time, read_record

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
SHIFTNET = Path(sys.executable).parent / "shiftnet"


class UpProcess:
    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(SHIFTNET), *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # so the test can signal it like a terminal would
        )
        self.lines: list[str] = []

    def read_until(self, pattern: str, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines))

    def rest(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.read()


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "somewhere" / "demo"
    shutil.copytree(REPO / "examples" / "demo", dst)
    return dst


@pytest.fixture
def up_env(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(state)
    yield state, env


def pod_pids(state: Path) -> list[int]:
    pids = []
    for f in state.glob("nodes/*/pods/*/*.pid"):
        rec = read_record(f)
        if rec is not None:
            pids.append(rec.pid)
    return pids


def test_up_runs_the_demo_and_ctrl_c_leaves_nothing(
    demo_copy: Path, up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, env = up_env
    net = f"127.{random.randint(100, 199)}.0.0/16"  # apart from other tests' pods
    up = UpProcess(
        ["up", "-f", str(demo_copy), "--node-name", "e2e", "--cluster-network", net],
        cwd=tmp_path,  # not the repository, not the demo directory
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        out = "\n".join(up.lines)
        assert "starting store" in out and "starting master" in out and "starting node" in out
        assert "pod/hello-1 created" in out
        assert "route.route.openshift.io/test created" in out
        assert "not ready after" not in out, out
        curls = re.findall(r"curl (http://[0-9.]+:\d+/\S*)\s+# (\S+)", out)
        assert len(curls) == 7, out
        for url, who in curls:
            ns, name = who.split("/")
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                url, timeout=10
            ) as resp:
                body = resp.read().decode()
            assert f"pod={name} ns={ns}" in body
        # Another shell sees the same cluster.
        got = subprocess.run(
            [str(SHIFTNET), "get", "pods", "-A", "-o", "wide"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert got.returncode == 0, got.stderr
        assert re.search(r"demo\s+hello-2\s+1/1\s+Running", got.stdout), got.stdout
        logs = subprocess.run(
            [str(SHIFTNET), "logs", "hello-1", "-n", "demo"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "podserver pod=hello-1 ns=demo listening on" in logs.stdout, logs.stderr
        pids = pod_pids(state)
        assert len(pids) == 7
        starts = {pid: process_start_time(pid) for pid in pids}
        assert all(starts.values())

        os.killpg(up.proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        code = up.proc.wait(timeout=60)
        tail = up.rest()
        assert code == 0, tail
        assert "stopped:" in tail
        for pid, start in starts.items():
            assert process_start_time(pid) != start, f"pod process {pid} survived shutdown"
        assert not pod_pids(state)
        # Nothing else of the up process group lingers either.
        with pytest.raises(ProcessLookupError):
            os.killpg(up.proc.pid, 0)
    finally:
        if up.proc.poll() is None:
            os.killpg(up.proc.pid, signal.SIGKILL)
            up.proc.wait()
        for pid in pod_pids(state):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def test_second_up_on_the_same_state_dir_is_refused(
    up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _state, env = up_env
    first = UpProcess(["up", "--node-name", "e2e-lock"], cwd=tmp_path, env=env)
    try:
        first.read_until(r"Press Ctrl-C", timeout=60)
        second = subprocess.run(
            [str(SHIFTNET), "up", "--node-name", "e2e-lock"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1
        assert 'another "shiftnet up"' in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        os.killpg(first.proc.pid, signal.SIGTERM)
        assert first.proc.wait(timeout=60) == 0


def test_bad_manifest_is_one_sentence_and_starts_nothing(
    up_env: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, env = up_env
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {bogus: 1}\n")
    res = subprocess.run(
        [str(SHIFTNET), "up", "-f", str(bad)], env=env, capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 1
    assert res.stderr.startswith("error: ") and "bogus" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (state / "state.db").exists()
