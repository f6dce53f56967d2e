"""Fixtures that yield a fresh store URL for each backend (sqlite file, real etcd)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.etcd import EtcdServer


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    srv = EtcdServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(params=["sqlite", "etcd"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A store URL no other test shares: a new sqlite file, or a fresh etcd."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/state.db"
    srv: EtcdServer = request.getfixturevalue("etcd_server")
    # one etcd per session: isolate tests by wiping the keyspace first
    import httpx

    base = f"http://127.0.0.1:{srv.client_port}"
    httpx.post(f"{base}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}, timeout=5)
    return srv.url
