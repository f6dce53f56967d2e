"""Fixtures of the end-to-end tests that run ``shiftnet up``: a copy of the demo and
an environment whose state, registry and ports are the test's own."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.leftovers import check_no_haproxy_left
from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_haproxy_left(tmp_path: Path) -> Iterator[None]:
    """Every end-to-end test stops the HAProxy it started (it runs in a session of its
    own and outlives a killed ``shiftnet``): one still running on the test's state fails
    the test, and is stopped."""
    yield
    check_no_haproxy_left(tmp_path)


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """The demo, copied away from the checkout (pod commands work from anywhere)."""
    dst = tmp_path / "somewhere" / "demo"
    shutil.copytree(REPO / "examples" / "demo", dst)
    return dst


@pytest.fixture
def up_env(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """``(state directory, environment)`` for one ``shiftnet up`` of this test."""
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env["SHIFTNET_HOME"] = str(state)
    env["SHIFTNET_CLUSTERS_DIR"] = str(tmp_path / "clusters")  # claims of this test only
    # never the host's 80/443/53: the router and DNS of `up` get free high ports
    env["ROUTER_SERVICE_HTTP_PORT"] = str(free_port())
    env["ROUTER_SERVICE_HTTPS_PORT"] = str(free_port())
    env["STATS_PORT"] = str(free_port())
    env["SHIFTNET_DNS_LISTEN"] = f"127.0.0.1:{free_port()}"
    env["SHIFTNET_API_LISTEN"] = f"127.0.0.1:{free_port()}"  # never the host's 6443
    yield state, env
