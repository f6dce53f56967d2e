"""A running ``shiftnet apiserver`` per test, over its own SQLite store, and an HTTPS
client that trusts its CA and sends its token."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.apiserver import APIServerProcess


@pytest.fixture
def api(tmp_path: Path) -> Iterator[APIServerProcess]:
    server = APIServerProcess(home=tmp_path / "home")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http(api: APIServerProcess) -> Iterator[httpx.Client]:
    ctx = ssl.create_default_context(cafile=api.ca)
    headers = {"Authorization": f"Bearer {api.token}"}
    with httpx.Client(base_url=api.url, verify=ctx, timeout=30, headers=headers) as client:
        yield client
