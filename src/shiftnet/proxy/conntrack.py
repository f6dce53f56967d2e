"""UDP conntrack cleanup for the kernel modes.

The kernel decides a flow's NAT on its first packet and keeps the decision in
a conntrack entry for as long as packets keep coming (UDP: 30 s after the
last one, 120 s once both sides spoke). A UDP client that keeps sending from
the same source port (a DNS resolver, a game, a syslog sender) therefore
stays bound to the endpoint it first reached even after that endpoint left
the service: rules alone cannot move it. As kube-proxy's reconciler does,
after each sync that touched a UDP service the proxy deletes every UDP
entry whose original destination is a service address:port (ClusterIP,
external IP, load-balancer address, node port) and whose reply source is not
one of the endpoints that address may reach: entries to a removed endpoint,
and entries made before the service had endpoints (not NATed: their reply
source is the service address itself). Entries to a UDP service that was
removed are deleted too. The next packet then takes the rules afresh.

:func:`stale_flows` is the pure choice; :class:`ConntrackCleaner` reads and
deletes entries over ctnetlink (``proxy/ctnetlink.py``) on a thread inside the
proxy's network namespace, since ``setns`` moves only the calling thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from prometheus_client import Counter

from shiftnet.proxy.ctnetlink import Ctnetlink, Tuple
from shiftnet.proxy.model import NODE_PORT_ADDRESS, ServiceEntry, ServiceTable, TableDiff

log = logging.getLogger(__name__)

CLONE_NEWNET = 0x40000000
# up to this many UDP service addresses, one kernel-filtered dump each; beyond, one
# dump of all UDP entries (each dump walks the whole table in the kernel)
FILTERED_DUMPS_UP_TO = 32

DELETED = Counter(
    "shiftnet_proxy_conntrack_deleted_total",
    "UDP conntrack entries deleted because their endpoint no longer serves the service",
)
FAILURES = Counter(
    "shiftnet_proxy_conntrack_failures_total",
    "Conntrack cleanups that could not list or delete entries (retried at the next sync)",
)


class Flow(NamedTuple):
    """The parts of a UDP conntrack entry the choice needs."""

    orig_src: str
    orig_sport: int
    orig_dst: str  # the address the client sent to (a ClusterIP)
    orig_dport: int
    reply_src: str  # where the kernel sends it (the endpoint, after DNAT)
    reply_sport: int


def _udp(entries: Iterable[ServiceEntry]) -> list[ServiceEntry]:
    return [e for e in entries if e.protocol == "UDP"]


def worth_cleaning(table: ServiceTable, diff: TableDiff | None) -> bool:
    """Whether a sync may have left stale UDP entries: a full sync (``diff`` None)
    with any UDP service, or a partial one that added, changed or removed one."""
    if diff is None:
        return any(e.protocol == "UDP" for e in table.entries.values())
    changed = [new for _, new in diff.changed] + [old for old, _ in diff.changed]
    return bool(_udp([*diff.added, *diff.removed, *changed]))


def stale_flows(
    table: ServiceTable, flows: Iterable[Flow], removed: Iterable[ServiceEntry] = ()
) -> list[Flow]:
    """The UDP flows to delete: sent to a UDP service address:port (ClusterIP,
    external IP, load-balancer address, or any address at its node port) but
    answered by something that is not one of the endpoints that address may
    reach, or sent to a removed UDP service."""
    serving: dict[tuple[str, int], set[tuple[str, int]]] = {}
    node_ports: dict[int, set[tuple[str, int]]] = {}
    for entry in _udp(table.entries.values()):
        inside = {(b.ip, b.port) for b in entry.cluster_backends}
        outside = {(b.ip, b.port) for b in entry.external_backends}
        serving[(entry.cluster_ip, entry.port)] = inside
        for ip, _, port in entry.external_vips:
            if ip == NODE_PORT_ADDRESS:
                node_ports[port] = outside
            else:
                serving[(ip, port)] = outside
    gone_ips: set[tuple[str, int]] = set()
    gone_ports: set[int] = set()
    for entry in _udp(removed):
        for ip, _, port in entry.claims:
            if ip == NODE_PORT_ADDRESS:
                gone_ports.add(port)
            else:
                gone_ips.add((ip, port))
    gone_ips -= serving.keys()
    gone_ports -= node_ports.keys()
    stale = []
    for flow in flows:
        key = (flow.orig_dst, flow.orig_dport)
        allowed = serving.get(key)
        if allowed is None:
            allowed = node_ports.get(flow.orig_dport)
        if allowed is not None:
            if (flow.reply_src, flow.reply_sport) not in allowed:
                stale.append(flow)
        elif key in gone_ips or flow.orig_dport in gone_ports:
            stale.append(flow)
    return sorted(stale)


def udp_addresses(
    table: ServiceTable, removed: Iterable[ServiceEntry] = ()
) -> list[tuple[str, int]]:
    """Every address:port of the UDP services (node ports as ``("*", port)``), where
    the stale flows can be."""
    found = {
        (ip, port)
        for entry in _udp([*table.entries.values(), *removed])
        for ip, _, port in entry.claims
    }
    return sorted(found)


class ConntrackCleaner:
    """Deletes stale UDP entries in one network namespace (None: this process's)."""

    def __init__(self, netns: str | None) -> None:
        self.netns = netns
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ct-{netns or 'host'}")
        self._entered = False
        self.owed = False  # the last cleanup failed: the next sync cleans in any case

    async def after_sync(self, table: ServiceTable, diff: TableDiff | None) -> int:
        """Clean when the sync touched a UDP service or the last cleanup failed."""
        if not (self.owed or worth_cleaning(table, diff)):
            return 0
        return await self.clean(table, diff)

    async def clean(self, table: ServiceTable, diff: TableDiff | None) -> int:
        """Delete the stale entries; the number deleted. Failures are logged and
        counted, never raised (the rules are already in place), and owed: the next
        sync cleans again whatever it changed."""
        removed = diff.removed if diff is not None else ()
        try:
            deleted = await asyncio.get_running_loop().run_in_executor(
                self._pool, self._clean, table, removed
            )
        except OSError as exc:
            FAILURES.inc()
            self.owed = True
            log.warning("conntrack cleanup failed netns=%s error=%s", self.netns or "-", exc)
            return 0
        self.owed = False
        if deleted:
            DELETED.inc(deleted)
            log.info("conntrack entries deleted netns=%s count=%d", self.netns or "-", deleted)
        return deleted

    def _enter(self) -> None:
        if self._entered or not self.netns:
            self._entered = True
            return
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fd = os.open(f"/run/netns/{self.netns}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns({self.netns}): {os.strerror(err)}")
        finally:
            os.close(fd)
        self._entered = True

    def _clean(self, table: ServiceTable, removed: tuple[ServiceEntry, ...]) -> int:
        self._enter()
        nl = Ctnetlink()
        try:
            addresses = udp_addresses(table, removed)
            if len(addresses) > FILTERED_DUMPS_UP_TO:
                entries = nl.udp_entries()  # one dump of every UDP entry
            else:  # the kernel picks the entries to each service address
                entries = [
                    e
                    for ip, port in addresses
                    for e in nl.udp_entries(None if ip == NODE_PORT_ADDRESS else ip, port)
                ]
            flows = [Flow(o.src, o.sport, o.dst, o.dport, r.src, r.sport) for o, r in entries]
            stale = stale_flows(table, flows, removed)
            nl.delete_udp(
                [Tuple(f.orig_src, f.orig_sport, f.orig_dst, f.orig_dport) for f in stale]
            )
            return len(stale)
        finally:
            nl.close()

    def close(self) -> None:
        self._pool.shutdown(wait=False)
