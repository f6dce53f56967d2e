"""The node agent: register the Node, wait for its HostSubnet, run its Pods.

It reads the cluster only through informers (Pods, HostSubnets) and writes
only its own Node and the status of the Pods scheduled to it. Every change
(pod event, container exit, readiness flip) kicks one coalesced sync that
reconciles running pods with the store and writes back changed statuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import logging
import shutil
from collections import defaultdict
from pathlib import Path

from shiftnet.api import ClusterNetwork, HostSubnet, Node, NodeAddress, ObjectMeta, Pod
from shiftnet.api.base import Condition
from shiftnet.api.core import NodeStatus, PodStatus
from shiftnet.api.termination import terminating
from shiftnet.client import Client
from shiftnet.errors import (
    AllocationError,
    AlreadyExists,
    ConfigError,
    Conflict,
    InvalidObject,
    NotFound,
    ShiftnetError,
)
from shiftnet.events.recorder import EventRecorder
from shiftnet.informer import Informers
from shiftnet.ipam import IPRange
from shiftnet.pod_deletion import remove_stopped
from shiftnet.runner import CoalescingRunner
from shiftnet.sdn import metrics
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.local import network_for
from shiftnet.sdn.pidfiles import ContainerRecord, read_record
from shiftnet.sdn.pods import PodRunner, spec_hash
from shiftnet.sdn.podstatus import stopped_status
from shiftnet.sdn.process import PodProcess
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

ORPHAN_GRACE = 5.0
STATUS_WRITERS = 8
REMOVE_ATTEMPTS = 8  # reads and deletes of a terminated pod racing our status writes


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class NodeAgent:
    """``await agent.start()`` registers and starts syncing; ``await agent.stop()`` ends it."""

    def __init__(
        self, store: Store, config: NodeConfig, informers: Informers | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.client = Client(store)
        self.events = EventRecorder(self.client, "node", host=config.node_name)
        self._own_informers = informers is None
        self.informers = informers or Informers(store)
        self.pods = self.informers.informer(Pod)
        self.subnets = self.informers.informer(HostSubnet)
        self.clusternets = self.informers.informer(ClusterNetwork)
        self.network = network_for(config)
        # pods start only once the node network exists (sdn: br0, vxlan0, routes)
        self._network_ready = False
        self._stale_checked = False
        self._net_sync = CoalescingRunner(
            self._sync_network,
            min_interval=0.05,
            max_interval=30.0,
            name=f"node-network-{config.node_name}",
        )
        self.runners: dict[tuple[str, str], PodRunner] = {}
        self.subnet: str | None = None
        self.ips: IPRange | None = None
        self._subnet_ready = asyncio.Event()
        self._adoptable: dict[str, dict[str, ContainerRecord]] = {}
        self._terminating: set[asyncio.Task[None]] = set()
        self._stopping: set[tuple[str, str]] = set()  # pods whose processes are being stopped
        # pods we cannot run: (reason, message) for their status
        self._unplaceable: dict[tuple[str, str], tuple[str, str]] = {}
        self._sync = CoalescingRunner(
            self._sync_once,
            min_interval=0.05,
            max_interval=5.0,
            name=f"node-agent-{config.node_name}",
        )
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._started = False

    @property
    def name(self) -> str:
        return self.config.node_name

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.config.node_dir.mkdir(parents=True, exist_ok=True)
        self._adoptable = self._scan_pid_records()
        await self.events.start()
        await self._register()
        self.pods.add_handler(self._on_pod)
        self.subnets.add_handler(self._on_subnet)
        self.clusternets.add_handler(lambda *_: self._net_sync.kick())
        await self.informers.start()
        self._on_subnet("ADDED", None, None)
        await self._net_sync.flush()  # the node network exists before pods are adopted
        await self._net_sync.start()
        if self.ips is not None:
            await self._sync.flush()  # adopt or start known pods before returning
        await self._sync.start()
        self._sync.kick()
        self._heartbeat_task = asyncio.get_running_loop().create_task(
            self._heartbeat(), name=f"heartbeat-{self.name}"
        )
        self._started = True
        log.info("node agent started node=%s network=%s", self.name, self.config.network)

    async def wait_for_subnet(self, timeout: float | None = None) -> str:
        """The node's HostSubnet once the master has allocated it."""
        await asyncio.wait_for(self._subnet_ready.wait(), timeout)
        assert self.subnet is not None
        return self.subnet

    async def stop(self) -> None:
        """Stop syncing; stop every pod process unless ``stop_pods_on_exit`` is off."""
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat_task
        await self._net_sync.stop()
        await self._sync.stop()
        kill = self.config.stop_pods_on_exit
        await asyncio.gather(*(r.stop(kill=kill) for r in self.runners.values()))
        if self._terminating:
            await asyncio.gather(*self._terminating, return_exceptions=True)
        if kill:
            await self._report_stopped()
        self.runners.clear()
        await self.events.stop()
        if self._own_informers:
            await self.informers.stop()
        if self._started:
            with contextlib.suppress(ShiftnetError, OSError):
                await self._set_ready(False, "NodeAgentStopped", "shiftnet node agent stopped")
        log.info("node agent stopped node=%s pods_stopped=%s", self.name, kill)

    async def _report_stopped(self) -> None:
        """Tell the cluster the pods no longer run, so Endpoints drop them now."""
        message = f'node agent "{self.name}" stopped; the pod runs again when it is back'
        when = _now()

        async def one(runner: PodRunner) -> None:
            status = stopped_status(runner.status(), when, message)

            def put(current: Pod) -> Pod | None:
                if current.metadata.uid != runner.uid:
                    return None
                current.status = status
                return current

            with contextlib.suppress(ShiftnetError, OSError):
                await self.network.teardown_pod(runner.namespace, runner.name, runner.pod_ip)
                await self.client.mutate(Pod, runner.namespace, runner.name, put)

        await asyncio.gather(*(one(r) for r in self.runners.values()))

    # ------------------------------------------------------------ node object

    def _ready_condition(self, ready: bool, reason: str, message: str) -> Condition:
        now = _now()
        return Condition(
            type="Ready",
            status="True" if ready else "False",
            reason=reason,
            message=message,
            last_transition_time=now,
            last_probe_time=now,
        )

    def _node_status(self) -> NodeStatus:
        return NodeStatus(
            addresses=[
                NodeAddress(type="InternalIP", address=self.config.host_ip),
                NodeAddress(type="Hostname", address=self.name),
            ],
            conditions=[
                self._ready_condition(
                    True, "KubeletReady", "shiftnet node agent is posting ready status"
                )
            ],
        )

    async def _register(self) -> None:
        labels = {"kubernetes.io/hostname": self.name, **self.config.labels}
        node = Node(metadata=ObjectMeta(name=self.name, labels=labels), status=self._node_status())
        try:
            await self.client.create(node)
            log.info("registered node node=%s ip=%s", self.name, self.config.host_ip)
            return
        except AlreadyExists:
            pass
        except Conflict:
            # a server that drops or alters the status sent with a create gets it in a
            # second write, and someone (the master) changed the new Node in between: the
            # Node exists, so refresh it like an old one, keeping what they wrote
            log.info("node written during registration, refreshing node=%s", self.name)

        def refresh(n: Node) -> Node:
            n.metadata.labels.update(labels)
            fresh = self._node_status()
            n.status.addresses = fresh.addresses
            # keep what others wrote (the master's NetworkUnavailable condition)
            others = [c for c in n.status.conditions if c.type != "Ready"]
            n.status.conditions = others + fresh.conditions
            return n

        await self.client.mutate(Node, None, self.name, refresh)
        log.info("re-registered node node=%s ip=%s", self.name, self.config.host_ip)

    async def _set_ready(self, ready: bool, reason: str, message: str) -> None:
        def change(n: Node) -> Node:
            old = next((c for c in n.status.conditions if c.type == "Ready"), None)
            cond = self._ready_condition(ready, reason, message)
            if old is not None and old.status == cond.status:
                cond.last_transition_time = old.last_transition_time
            n.status.conditions = [c for c in n.status.conditions if c.type != "Ready"] + [cond]
            return n

        stored = await self.client.mutate(Node, None, self.name, change)
        if stored is None and ready and await self.client.try_get(Node, None, self.name) is None:
            await self._register()  # someone deleted our Node: come back

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat_seconds)
            try:
                await self._set_ready(
                    True, "KubeletReady", "shiftnet node agent is posting ready status"
                )
            except (ShiftnetError, OSError) as err:
                log.warning("heartbeat failed node=%s error=%s", self.name, err)

    # ------------------------------------------------------------ events

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        for p in (old, new):
            if p is not None and (p.spec.node_name == self.name or p.key in self.runners):
                self._sync.kick()
                return

    def _on_subnet(self, etype: str, old: HostSubnet | None, new: HostSubnet | None) -> None:
        self._net_sync.kick()  # any node's subnet: paths to other nodes change too
        hs = next(
            (h for h in self.subnets.list() if h.host == self.name or h.name == self.name), None
        )
        subnet = hs.subnet if hs is not None and hs.subnet else None
        if subnet == self.subnet:
            return
        if subnet is None:
            log.warning("host subnet removed node=%s old=%s", self.name, self.subnet)
            return  # keep running pods on their addresses; new pods wait
        try:
            self.network.check_subnet(subnet)
            ips = IPRange.for_pods(subnet)
        except (ConfigError, AllocationError) as err:
            log.error("unusable host subnet node=%s subnet=%s error=%s", self.name, subnet, err)
            return
        if self.subnet is not None:
            log.warning("host subnet changed node=%s old=%s new=%s", self.name, self.subnet, subnet)
        self.subnet = subnet
        self.ips = ips
        self.ips.rebuild(r.pod_ip for r in self.runners.values())
        log.info("host subnet node=%s subnet=%s", self.name, subnet)
        self._subnet_ready.set()
        self._sync.kick()

    def kick(self) -> None:
        self._sync.kick()

    async def _sync_network(self) -> None:
        """Node network from every HostSubnet and the ``default`` ClusterNetwork."""
        try:
            ready = await self.network.ensure_node(
                self.subnets.list(), self.clusternets.get(None, "default")
            )
        except (ShiftnetError, OSError) as err:
            log.error("node network sync failed node=%s error=%s", self.name, err)
            ready = False
        if ready and not self._network_ready:
            log.info("node network ready node=%s", self.name)
        self._network_ready = self._network_ready or ready
        if self._network_ready:
            self._sync.kick()

    # ------------------------------------------------------------ pid records

    def _scan_pid_records(self) -> dict[str, dict[str, ContainerRecord]]:
        found: dict[str, dict[str, ContainerRecord]] = defaultdict(dict)
        for path in sorted((self.config.node_dir / "pods").glob("*/*.pid")):
            rec = read_record(path)
            if rec is not None:
                found[rec.pod_uid][rec.container] = rec
        return dict(found)

    async def _reap_orphans(self, wanted_uids: set[str]) -> None:
        """Processes from an earlier agent whose pod no longer exists (or changed)."""
        for uid in sorted(set(self._adoptable) - wanted_uids):
            records = self._adoptable.pop(uid)
            for rec in records.values():
                proc = PodProcess.adopt(rec.pid, rec.start_time)
                if proc is not None:
                    log.info("stopping orphan pod=%s/%s pid=%d", rec.namespace, rec.pod, rec.pid)
                    await proc.terminate(ORPHAN_GRACE)
            shutil.rmtree(self.config.node_dir / "pods" / uid, ignore_errors=True)

    # ------------------------------------------------------------ sync

    def _my_pods(self) -> dict[tuple[str, str], Pod]:
        return {p.key: p for p in self.pods.list() if p.spec.node_name == self.name}

    async def _sync_once(self) -> None:
        if self.ips is None or self.subnet is None or not self._network_ready:
            return
        with metrics.SYNC_SECONDS.time():
            await self._reconcile()
        metrics.PODS_RUNNING.set(len(self.runners))
        metrics.POD_IPS_FREE.set(self.ips.free)

    async def _reconcile(self) -> None:
        wanted = self._my_pods()
        # Adopt only into pods whose uid and spec are unchanged; reap the rest.
        adopt_uids = {
            p.metadata.uid or ""
            for p in wanted.values()
            if p.metadata.uid in self._adoptable
            and not terminating(p)  # its deletion was asked while we were away: reap it
            and all(
                r.spec_hash == spec_hash(p) for r in self._adoptable[p.metadata.uid or ""].values()
            )
        }
        await self._reap_orphans(adopt_uids)
        if not self._stale_checked:  # once per agent: sandboxes of pods gone while it was down
            # a pod deleted while we were away has nothing to keep, even if its object is left
            keep = {k for k, p in wanted.items() if not terminating(p)} | set(self.runners)
            try:
                await self.network.remove_stale(keep)
                self._stale_checked = True
            except (ShiftnetError, OSError) as err:
                log.warning("stale pod sandboxes not removed node=%s error=%s", self.name, err)

        for key, runner in list(self.runners.items()):
            pod = wanted.get(key)
            if pod is None or pod.metadata.uid != runner.uid or spec_hash(pod) != runner.spec_hash:
                del self.runners[key]
                self._terminate(runner)
            elif terminating(pod):
                # deletion asked: stop within its grace period, then remove the object
                del self.runners[key]
                grace = pod.metadata.deletion_grace_period_seconds
                if grace is not None:
                    runner.grace = float(grace)
                self._terminate(runner, remove=pod)

        for key, pod in wanted.items():
            # A pod replaced under the same name (new uid or spec) starts once the old
            # processes are gone: they share its directories and may hold its port.
            if key in self.runners or key in self._stopping:
                continue
            if terminating(pod):
                self._unplaceable.pop(key, None)
                await self._remove_terminated(pod)  # nothing of it runs here
                continue
            await self._start_pod(pod)

        await self._write_statuses(wanted)

    def _terminate(self, runner: PodRunner, remove: Pod | None = None) -> None:
        """Stop a pod's processes in the background; ``remove``: then delete that pod."""
        key = (runner.namespace, runner.name)
        self._stopping.add(key)

        async def stop() -> None:
            try:
                await runner.stop(kill=True)
                await self.network.teardown_pod(runner.namespace, runner.name, runner.pod_ip)
                if remove is not None:
                    await self._remove_terminated(remove)
            finally:
                if self.ips is not None:
                    self.ips.release(runner.pod_ip)
                self._stopping.discard(key)
                self._sync.kick()

        task = asyncio.get_running_loop().create_task(
            stop(), name=f"stop {runner.namespace}/{runner.name}"
        )
        self._terminating.add(task)
        task.add_done_callback(self._terminating.discard)

    async def _remove_terminated(self, pod: Pod) -> None:
        """The pod's processes are gone: remove its object (that very pod, by uid)."""
        ns, name, uid = pod.metadata.namespace or "default", pod.metadata.name, pod.metadata.uid
        for _ in range(REMOVE_ATTEMPTS):
            try:
                raw = await self.store.get(Pod.RESOURCE, ns, name)
                meta = raw.get("metadata") or {}
                if meta.get("uid") != uid or not meta.get("deletionTimestamp"):
                    return
                await remove_stopped(self.store, ns, name, str(meta.get("resourceVersion")))
                log.info("pod terminated and removed pod=%s/%s", ns, name)
                return
            except NotFound:
                return
            except Conflict:
                continue  # our own status write or another change: read again
            except (ShiftnetError, OSError) as err:
                log.warning("terminated pod not removed pod=%s/%s error=%s", ns, name, err)
                self._sync.kick()
                return

    def _pick_ip(self, pod: Pod, adopt: dict[str, ContainerRecord] | None) -> str:
        assert self.ips is not None
        for candidate in ([next(iter(adopt.values())).pod_ip] if adopt else []) + [
            pod.status.pod_ip or ""
        ]:
            if candidate and self.ips.contains(candidate) and not self.ips.is_allocated(candidate):
                return self.ips.allocate(candidate)
        return self.ips.allocate_next()

    async def _start_pod(self, pod: Pod) -> None:
        if pod.status.phase in ("Succeeded", "Failed") and pod.status.pod_ip:
            return  # finished before an agent restart: leave it finished
        uid = pod.metadata.uid or ""
        adopt = self._adoptable.pop(uid, None)
        try:
            ip = self._pick_ip(pod, adopt)
        except AllocationError as err:
            self._unplaceable[pod.key] = (
                "OutOfAddresses",
                f"no pod IP left in host subnet {self.subnet}: {err}",
            )
            log.error("cannot place pod pod=%s/%s error=%s", pod.namespace, pod.name, err)
            return
        try:
            runner = PodRunner(
                pod,
                ip,
                self.config,
                self._sync.kick,
                adopt,
                command=self.network.command,
                events=self.events,
            )
        except InvalidObject as err:
            if self.ips is not None:
                self.ips.release(ip)
            if self._unplaceable.get(pod.key) != ("InvalidPod", str(err)):
                log.error("cannot run pod pod=%s/%s error=%s", pod.namespace, pod.name, err)
            self._unplaceable[pod.key] = ("InvalidPod", str(err))
            return
        try:
            await self.network.setup_pod(pod.namespace or "default", pod.name, ip, runner.etc_files)
        except (ShiftnetError, OSError) as err:
            if self.ips is not None:
                self.ips.release(ip)
            if adopt is not None:
                self._adoptable[uid] = adopt
            self._unplaceable[pod.key] = ("NetworkSetupFailed", str(err))
            log.error("pod network setup failed pod=%s/%s error=%s", pod.namespace, pod.name, err)
            self._sync.kick()
            return
        self._unplaceable.pop(pod.key, None)
        self.runners[pod.key] = runner
        runner.start()

    async def _write_statuses(self, wanted: dict[tuple[str, str], Pod]) -> None:
        jobs: list[tuple[Pod, PodStatus]] = []
        for key, pod in wanted.items():
            runner = self.runners.get(key)
            if runner is not None:
                status = runner.status()
            elif key in self._unplaceable:
                reason, message = self._unplaceable[key]
                status = PodStatus(
                    phase="Pending",
                    reason=reason,
                    message=message,
                    host_ip=self.config.host_ip,
                )
            else:
                continue
            if status.to_dict() != pod.status.to_dict():
                jobs.append((pod, status))
        if not jobs:
            return
        gate = asyncio.Semaphore(STATUS_WRITERS)

        async def write(pod: Pod, status: PodStatus) -> None:
            uid = pod.metadata.uid

            def put(current: Pod) -> Pod | None:
                if current.metadata.uid != uid or current.spec.node_name != self.name:
                    return None
                current.status = status
                return current

            async with gate:
                try:
                    if await self.client.mutate(Pod, pod.namespace, pod.name, put) is not None:
                        metrics.STATUS_WRITES.inc()
                except InvalidObject as err:  # retrying cannot help; the next change may
                    log.warning(
                        "pod status refused pod=%s/%s error=%s", pod.namespace, pod.name, err
                    )
                except (ShiftnetError, OSError) as err:
                    log.warning(
                        "pod status write failed pod=%s/%s error=%s", pod.namespace, pod.name, err
                    )
                    self._sync.kick()

        await asyncio.gather(*(write(p, s) for p, s in jobs))

    # ------------------------------------------------------------ introspection

    def pod_pids(self) -> dict[tuple[str, str], list[int]]:
        return {k: r.pids() for k, r in sorted(self.runners.items())}

    @property
    def node_dir(self) -> Path:
        return self.config.node_dir
