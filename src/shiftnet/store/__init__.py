"""The cluster configuration store: one protocol, backends chosen by URL.

``sqlite:///path/state.db`` (embedded default) or ``etcd://host:port[,host:port]``.
"""

from __future__ import annotations

from shiftnet.errors import ConfigError
from shiftnet.store.base import ListResult, Store, WatchEvent


def open_store(url: str) -> Store:
    """Open the backend a URL names (no I/O happens until first use)."""
    if url.startswith("sqlite://"):
        from shiftnet.store.sqlite import SqliteStore

        return SqliteStore(url)
    if url.startswith("etcd://"):
        from shiftnet.store.etcd import EtcdStore

        return EtcdStore(url)
    raise ConfigError(
        f'store URL "{url}" is not supported: use sqlite:///path/state.db or etcd://host:port'
    )


__all__ = ["ListResult", "Store", "WatchEvent", "open_store"]
