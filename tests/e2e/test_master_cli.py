"""``shiftnet master`` as a user runs it: a process that allocates, stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.support.cli import SHIFTNET, Shiftnet, one_error_line

pytestmark = pytest.mark.integration

SERVICES = """
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Node
metadata: {name: node-x}
status:
  addresses: [{type: InternalIP, address: 127.0.0.1}]
  conditions: [{type: Ready, status: "True"}]
"""


def start_master(home: Path, *flags: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(home)
    return subprocess.Popen(
        [SHIFTNET, "--store", f"sqlite://{home}/state.db", "master", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for(fn, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_master_allocates_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sn = Shiftnet(f"sqlite://{home}/state.db", home)
    proc = start_master(home, "--service-network", "127.31.0.0/24")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "master running" in line and "127.31.0.0/24" in line, line
        sn.ok("apply", "-f", "-", input=SERVICES)

        def allocated() -> dict | None:
            svc = json.loads(sn.ok("get", "svc", "web", "-o", "json"))
            return svc if svc["spec"].get("clusterIP") else None

        svc = wait_for(allocated)
        assert svc["spec"]["clusterIP"].startswith("127.31.0.")
        hs = wait_for(lambda: sn.run("get", "hostsubnets", "node-x", "-o", "json").stdout)
        assert json.loads(hs)["subnet"] == "127.10.0.0/24"
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
    assert code == 130
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


def test_bad_setting_is_one_sentence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = start_master(home, "--service-network", "127.10.0.0/24")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "overlaps cluster network 127.10.0.0/16" in one_error_line(err)
