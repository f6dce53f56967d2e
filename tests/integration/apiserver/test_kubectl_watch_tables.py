"""``kubectl get -w`` with its default table output and ``-o wide`` against a real
``shiftnet apiserver``: one header, then one row per event, as from a real cluster
(the server answers each watch event with a one-row Table)."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from tests.support.apiserver import KUBECTL, APIServerProcess

pytestmark = pytest.mark.integration

ROUTE = """\
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: NAME}
spec:
  host: HOST
  to: {kind: Service, name: web}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  nodeName: n7
  containers:
  - {name: main, image: none}
"""


class Watching:
    """``kubectl get ... -w`` in a subprocess, its stdout lines gathered on a thread."""

    def __init__(self, api: APIServerProcess, *args: str) -> None:
        self.proc = subprocess.Popen(
            [KUBECTL, "get", *args, "-w", "--request-timeout=0"],
            env=api.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_lines(self, count: int, timeout: float = 20) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.lines) < count:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""
                raise AssertionError(f"{count} lines not printed: {self.lines} {err}")
            time.sleep(0.1)
        return list(self.lines)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.reader.join(5)


def route(name: str, host: str) -> str:
    return ROUTE.replace("NAME", name).replace("HOST", host)


@pytest.mark.parametrize("wide", [False, True], ids=["table", "wide"])
def test_get_routes_watch_prints_a_row_per_change(api: APIServerProcess, wide: bool) -> None:
    extra = ("-o", "wide") if wide else ()
    api.ok("apply", "-f", "-", input=route("web", "web.example.com"))
    header = api.ok("get", "routes", *extra).splitlines()[0]
    watch = Watching(api, "routes", *extra)
    try:
        first = watch.wait_lines(2)
        assert first[0] == header  # the header once, columns as a plain get prints them
        api.ok("apply", "-f", "-", input=route("web", "www.example.com"))
        api.ok("apply", "-f", "-", input=route("two", "two.example.com"))
        api.ok("delete", "route", "two")
        lines = watch.wait_lines(5)
    finally:
        watch.stop()
    assert lines[0].split() == [
        "NAME",
        "HOST/PORT",
        "PATH",
        "SERVICES",
        "PORT",
        "TERMINATION",
        "WILDCARD",
    ]
    rows = [line.split() for line in lines[1:]]
    # created, modified, created, deleted: each event its own row, no second header
    assert rows == [
        ["web", "web.example.com", "web", "<all>", "None"],
        ["web", "www.example.com", "web", "<all>", "None"],
        ["two", "two.example.com", "web", "<all>", "None"],
        ["two", "two.example.com", "web", "<all>", "None"],
    ], lines
    # the cells stand under the header's columns
    host_at = lines[0].index("HOST/PORT")
    assert all(line[host_at:].startswith(("web.", "www.", "two.")) for line in lines[1:])


def test_get_pods_watch_wide_prints_the_wide_columns(api: APIServerProcess) -> None:
    """Routes have no wide-only columns (as in oc); pods do: NODE and IP in every row."""
    watch = Watching(api, "pods", "-o", "wide")
    try:
        time.sleep(1)  # the watch is open before the pod exists
        api.ok("create", "-f", "-", input=POD)
        lines = watch.wait_lines(2)
    finally:
        watch.stop()
    head = lines[0].split()
    assert head[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], lines
    assert "NODE" in head and "IP" in head, lines
    row = lines[1]
    assert row.split()[0] == "talker"
    assert row[lines[0].index("NODE") :].split()[0] == "n7", lines
