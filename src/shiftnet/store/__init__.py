"""The cluster configuration store: one protocol, backends chosen by URL.

``sqlite:///path/state.db`` (embedded default), ``etcd://host:port[,host:port]``, or
``kube:///path/kubeconfig`` (any Kubernetes API: shiftnet's own or a real cluster's).
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
    if url.startswith("kube://"):
        from shiftnet.store.kube import KubeStore

        return KubeStore(url)
    raise ConfigError(
        f'store URL "{url}" is not supported: use sqlite:///path/state.db, etcd://host:port '
        "or kube:///path/kubeconfig"
    )


__all__ = ["ListResult", "Store", "WatchEvent", "open_store"]
