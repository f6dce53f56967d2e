"""SDN subnet allocator: the single writer of HostSubnets and of the ClusterNetwork.

As the seed describes OpenShift SDN's master: when a Node registers, an unused
subnet of the cluster network is recorded for it (HostSubnet named as the
node, with its host name and InternalIP); when the Node is deleted the
HostSubnet goes and the subnet may be given again.

Allocation decisions are synchronous on one in-memory :class:`SubnetRange`
rebuilt from the stored HostSubnets before the first sync, and each node is
synced by one worker at a time, so no subnet is ever held by two
HostSubnets. A subnet is given back only after its HostSubnet is gone from
the store. A HostSubnet deleted by hand while its node lives is written again
with the same subnet (the node's pods already use those addresses).

When the cluster network is full the Node gets the condition
``NetworkUnavailable=True`` (reason ``SubnetsExhausted``) with one sentence
saying so, the log says the same, and the node is retried as soon as any
subnet is released.
"""

from __future__ import annotations

import datetime as _dt
import logging

from shiftnet.api import ClusterNetwork, ClusterNetworkEntry, HostSubnet, Node
from shiftnet.api.base import Condition, ObjectMeta
from shiftnet.client import Client
from shiftnet.errors import AllocationError, AlreadyExists, NotFound
from shiftnet.events.recorder import DISCARD, EventSink
from shiftnet.informer import Informers
from shiftnet.ipam import RangeFull, SubnetRange
from shiftnet.master import metrics
from shiftnet.master.config import PLUGIN_NAME, MasterConfig
from shiftnet.master.workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)

DEFAULT_NAME = "default"
CONDITION = "NetworkUnavailable"
REASON_EXHAUSTED = "SubnetsExhausted"
REASON_ALLOCATED = "SubnetAllocated"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cluster_network_object(config: MasterConfig) -> ClusterNetwork:
    """The ``default`` ClusterNetwork a fresh cluster gets from the master's settings."""
    return ClusterNetwork(
        metadata=ObjectMeta(name=DEFAULT_NAME),
        network=config.cluster_network,
        hostsubnetlength=config.host_subnet_length,
        cluster_networks=[
            ClusterNetworkEntry(
                cidr=config.cluster_network, host_subnet_length=config.host_subnet_length
            )
        ],
        service_network=config.service_network,
        plugin_name=PLUGIN_NAME,
    )


def effective_network(cn: ClusterNetwork) -> tuple[str, int] | None:
    """(CIDR, hostsubnetlength) a stored ClusterNetwork says, or None when it says nothing."""
    if cn.cluster_networks:
        e = cn.cluster_networks[0]
        return e.cidr, e.host_subnet_length
    if cn.network:
        return cn.network, cn.hostsubnetlength if cn.hostsubnetlength is not None else 8
    return None


def exhausted_message(node: str, rng: SubnetRange) -> str:
    return (
        f'no subnet left for node "{node}": cluster network {rng.cidr} '
        f"(hostsubnetlength {rng.host_bits}) has all {rng.capacity} /{rng.prefixlen} subnets "
        "in use (range is full); the node gets one as soon as another node is deleted"
    )


def set_network_condition(node: Node, unavailable: bool, reason: str, message: str) -> bool:
    """Set the NetworkUnavailable condition; False when it already says exactly that."""
    status = "True" if unavailable else "False"
    old = next((c for c in node.status.conditions if c.type == CONDITION), None)
    if old is not None and (old.status, old.reason, old.message) == (status, reason, message):
        return False
    now = _now()
    cond = Condition(
        type=CONDITION,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=old.last_transition_time
        if old is not None and old.status == status
        else now,
        last_probe_time=now,
    )
    node.status.conditions = [c for c in node.status.conditions if c.type != CONDITION] + [cond]
    return True


class SubnetAllocator:
    """One HostSubnet per Node, from the cluster network; see the module docstring."""

    def __init__(self, client: Client, informers: Informers, config: MasterConfig) -> None:
        self.client = client
        self.config = config
        self.range = SubnetRange(config.cluster_network, config.host_subnet_length)
        self.nodes = informers.informer(Node)
        self.subnets = informers.informer(HostSubnet)
        self.nodes.add_handler(self._on_node)
        self.subnets.add_handler(self._on_subnet)
        self._held: dict[str, str] = {}  # node name -> subnet, as stored (or being written)
        self._waiting: set[str] = set()  # nodes that found the range full
        self.queue: KeyedWorkQueue[str] = KeyedWorkQueue(
            self._sync, workers=config.workers, name="subnets"
        )
        self.allocations = 0
        self.exhausted = 0
        self.events: EventSink = DISCARD

    # ------------------------------------------------------------ lifecycle

    async def ensure_cluster_network(self) -> ClusterNetwork:
        """Create ClusterNetwork ``default`` from the settings, or adopt the stored one.

        Once subnets are handed out the stored network is authoritative: changing
        it would strand every node's pods, so a different setting is only logged.
        """
        cn = await self.client.try_get(ClusterNetwork, None, DEFAULT_NAME)
        if cn is None:
            try:
                cn = await self.client.create(cluster_network_object(self.config))
                log.info(
                    "cluster network created network=%s hostsubnetlength=%d service_network=%s",
                    self.config.cluster_network,
                    self.config.host_subnet_length,
                    self.config.service_network,
                )
            except AlreadyExists:
                cn = await self.client.get(ClusterNetwork, None, DEFAULT_NAME)
        stored = effective_network(cn)
        if stored is not None and stored != (self.config.cluster_network, self.range.host_bits):
            log.warning(
                "cluster network setting ignored, the stored one is kept "
                "stored=%s/%d setting=%s/%d",
                stored[0],
                stored[1],
                self.config.cluster_network,
                self.config.host_subnet_length,
            )
            try:
                self.range = SubnetRange(stored[0], stored[1])
            except AllocationError as exc:
                log.error("stored cluster network unusable, using the setting error=%s", exc)
        if not cn.service_network:

            def fill(c: ClusterNetwork) -> ClusterNetwork:
                c.service_network = self.config.service_network
                return c

            cn = await self.client.mutate(ClusterNetwork, None, DEFAULT_NAME, fill) or cn
        return cn

    def rebuild(self) -> None:
        """Take every subnet the stored HostSubnets hold; the oldest holder keeps a duplicate."""
        stored = sorted(
            (h for h in self.subnets.list() if h.subnet),
            key=lambda h: (h.metadata.creation_timestamp or "", h.name),
        )
        self._held.clear()
        self.range.rebuild(())
        for h in stored:
            try:
                self._held[h.name] = self.range.allocate(h.subnet)
            except AllocationError as exc:
                log.error(
                    "host subnet not usable, it will be reallocated hostsubnet=%s subnet=%s "
                    "error=%s",
                    h.name,
                    h.subnet,
                    exc,
                )
        self._gauges()
        log.info(
            "host subnets rebuilt network=%s allocated=%d free=%d",
            self.range.cidr,
            self.range.used,
            self.range.free,
        )

    async def start(self) -> None:
        """Call after the informers synced and :meth:`ensure_cluster_network`."""
        self.rebuild()
        for name in sorted({n.name for n in self.nodes.list()} | set(self._held)):
            self.queue.add(name)
        for h in self.subnets.list():
            self.queue.add(h.name)
        await self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # ------------------------------------------------------------ events

    def _on_node(self, etype: str, old: Node | None, new: Node | None) -> None:
        node = new or old
        if node is None:
            return
        if (
            etype == "MODIFIED"
            and old is not None
            and new is not None
            and old.internal_ip == new.internal_ip
            and new.spec.pod_cidr == self._held.get(new.name, "")
        ):
            cond = next((c for c in new.status.conditions if c.type == CONDITION), None)
            if cond is None or cond.reason != REASON_EXHAUSTED:
                return  # heartbeats: nothing for us
        self.queue.add(node.name)

    def _on_subnet(self, etype: str, old: HostSubnet | None, new: HostSubnet | None) -> None:
        hs = new or old
        if hs is not None:
            self.queue.add(hs.name)

    # ------------------------------------------------------------ sync

    def _release(self, name: str) -> None:
        subnet = self._held.pop(name, None)
        if subnet is None:
            return
        self.range.release(subnet)
        self._gauges()
        log.info("host subnet released node=%s subnet=%s", name, subnet)
        for waiting in sorted(self._waiting):
            self.queue.add(waiting)

    async def _sync(self, name: str) -> None:
        node = self.nodes.get(None, name)
        if node is None:
            node = await self.client.try_get(Node, None, name)  # our cache may lag
        if node is None:
            await self._remove(name)
            return
        self._waiting.discard(name)
        hs = self.subnets.get(None, name) or await self.client.try_get(HostSubnet, None, name)
        held = self._held.get(name)
        if hs is not None and hs.subnet and hs.subnet != held:
            held = self._adopt(name, hs.subnet)
        if held is None:
            try:
                held = self.range.allocate_next()
            except RangeFull:
                await self._exhausted(node)
                return
            self._held[name] = held
            self.allocations += 1
            self._gauges()
        host_ip = node.internal_ip or ""
        if hs is None:
            try:
                await self.client.create(
                    HostSubnet(
                        metadata=ObjectMeta(name=name), host=name, host_ip=host_ip, subnet=held
                    )
                )
                log.info("host subnet allocated node=%s subnet=%s host_ip=%s", name, held, host_ip)
            except AlreadyExists:
                self.queue.add(name)  # written meanwhile: look again
                return
        elif (hs.subnet, hs.host, hs.host_ip) != (held, name, host_ip):

            def fix(h: HostSubnet) -> HostSubnet:
                h.subnet, h.host, h.host_ip = held, name, host_ip
                return h

            await self.client.mutate(HostSubnet, None, name, fix)
            log.info("host subnet updated node=%s subnet=%s host_ip=%s", name, held, host_ip)
        cond = next((c for c in node.status.conditions if c.type == CONDITION), None)
        exhausted = cond is not None and cond.reason == REASON_EXHAUSTED
        if exhausted or node.spec.pod_cidr != held:
            msg = f"host subnet {held} allocated"

            def mark(n: Node) -> Node:
                # podCIDR as Kubernetes' node IPAM sets it, so `get nodes` shows the subnet
                n.spec.pod_cidr = held
                old = next((c for c in n.status.conditions if c.type == CONDITION), None)
                if old is not None and old.reason == REASON_EXHAUSTED:
                    set_network_condition(n, False, REASON_ALLOCATED, msg)
                return n

            await self.client.mutate(Node, None, name, mark)

    def _adopt(self, name: str, subnet: str) -> str | None:
        """A stored HostSubnet says ``subnet`` for this node and we hold something else
        (or nothing): keep the stored one when it is free, else hand out a new one."""
        if self.range.is_allocated(subnet):
            owner = next((n for n, s in self._held.items() if s == subnet), None)
            log.error(
                "host subnet already held by another node, reallocating node=%s subnet=%s "
                "holder=%s",
                name,
                subnet,
                owner,
            )
            return self._held.get(name)
        try:
            taken = self.range.allocate(subnet)
        except AllocationError as exc:
            log.error("host subnet outside the cluster network node=%s error=%s", name, exc)
            return self._held.get(name)
        old = self._held.get(name)
        self._held[name] = taken
        if old is not None:
            self.range.release(old)
        return taken

    def _gauges(self) -> None:
        metrics.HOST_SUBNETS_ALLOCATED.set(self.range.used)
        metrics.HOST_SUBNETS_FREE.set(self.range.free)

    async def _remove(self, name: str) -> None:
        """The node is gone: delete its HostSubnet, then give the subnet back."""
        self._waiting.discard(name)
        try:
            gone = await self.client.delete(HostSubnet, None, name)
            log.info("host subnet deleted node=%s subnet=%s", name, gone.subnet)
        except NotFound:
            pass
        self._release(name)

    async def _exhausted(self, node: Node) -> None:
        msg = exhausted_message(node.name, self.range)
        self._waiting.add(node.name)
        self.exhausted += 1
        metrics.SUBNETS_EXHAUSTED.inc()
        log.warning("host subnet not allocated node=%s error=%s", node.name, msg)
        self.events.warning(node, REASON_EXHAUSTED, msg)
        await self.client.mutate(
            Node,
            None,
            node.name,
            lambda n: n if set_network_condition(n, True, REASON_EXHAUSTED, msg) else None,
        )
