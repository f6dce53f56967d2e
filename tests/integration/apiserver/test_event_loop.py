"""``shiftnet apiserver`` serves from uvloop's event loop (its transports and TLS protocol
cost less CPU per request than asyncio's; docs/performance.md), and serves on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration


def test_the_api_server_runs_on_uvloop(api: APIServerProcess) -> None:
    mapped = Path(f"/proc/{api.pid}/maps").read_text()
    assert "/uvloop/loop." in mapped, "the API server's process has not loaded uvloop's loop"
    created = api.json("create", "namespace", "on-uvloop")
    assert created["metadata"]["name"] == "on-uvloop"
    assert (
        api.json("get", "namespace", "on-uvloop")["metadata"]["uid"] == created["metadata"]["uid"]
    )
