"""The pod IPs of each namespace, kept up to date one Pod event at a time. Pure.

``verified`` pod records answer only an address a pod of that namespace has.
Rebuilding the whole zone for every pod that starts or stops would cost a
pass over every Service and Endpoints; instead the server keeps this index
beside the zone and, when only pods changed, gives the zone a new snapshot
of it (:meth:`shiftnet.dns.zone.Zone.with_pods`).

Entries are keyed by pod, and setting a pod's entry is idempotent, so the
index depends only on each pod's last event: events of different pods may
arrive in any order, an event seen twice changes nothing, and a relist that
replays the cache gives the same index.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TypeVar

from shiftnet.api import Pod
from shiftnet.dns.addresses import Address

PodKey = tuple[str, str]  # (namespace, name)
PodEntry = tuple[str, Address]  # (namespace, IP)
K = TypeVar("K")


def pod_entry(pod: Pod | None) -> PodEntry | None:
    """What a pod contributes: its namespace and IP while it has one and is not
    terminating; None otherwise (and for an IP that does not parse)."""
    if pod is None or pod.metadata.deletion_timestamp or not pod.status.pod_ip:
        return None
    try:
        return (pod.metadata.namespace or "", ipaddress.ip_address(pod.status.pod_ip))
    except ValueError:
        return None


class PodIPIndex:
    """(namespace, IP) pairs of live pods, with how many pods hold each, and the
    namespaces that hold a pod."""

    def __init__(self) -> None:
        self._by_pod: dict[PodKey, PodEntry] = {}
        self._holders: dict[PodEntry, int] = {}
        self._per_namespace: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._by_pod)

    def put(self, key: PodKey, entry: PodEntry | None) -> bool:
        """Record pod ``key``'s entry (None: it has none, or it is gone). True when the
        namespaces that hold a pod changed."""
        old = self._by_pod.get(key)
        if old == entry:
            return False
        changed = False
        if old is not None:
            del self._by_pod[key]
            _decrement(self._holders, old)
            changed |= _decrement(self._per_namespace, old[0])
        if entry is not None:
            self._by_pod[key] = entry
            self._holders[entry] = self._holders.get(entry, 0) + 1
            count = self._per_namespace.get(entry[0], 0)
            self._per_namespace[entry[0]] = count + 1
            changed |= count == 0
        return changed

    def changed(self, old: Pod | None, new: Pod | None) -> bool:
        """Apply one informer event (``new`` None for DELETED); see :meth:`put`."""
        pod = new if new is not None else old
        if pod is None:
            return False
        return self.put((pod.metadata.namespace or "", pod.metadata.name), pod_entry(new))

    def reset(self, pods: Iterable[Pod]) -> None:
        """Start again from every pod (the informer's cache)."""
        self._by_pod.clear()
        self._holders.clear()
        self._per_namespace.clear()
        for pod in pods:
            self.put((pod.metadata.namespace or "", pod.metadata.name), pod_entry(pod))

    def snapshot(self) -> frozenset[PodEntry]:
        """The (namespace, IP) pairs now: what one zone answers from."""
        return frozenset(self._holders)

    def namespaces(self) -> set[str]:
        return set(self._per_namespace)


def _decrement(counts: dict[K, int], key: K) -> bool:
    """One fewer holder of ``key``; True when that was the last."""
    left = counts[key] - 1
    if left:
        counts[key] = left
        return False
    del counts[key]
    return True
