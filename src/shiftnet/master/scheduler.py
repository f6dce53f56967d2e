"""A trivial scheduler: unscheduled pods go round robin over ready nodes.

A node can take pods when it is Ready, not ``spec.unschedulable``, has no
``NetworkUnavailable=True`` condition (no subnet, so no pod addresses) and
its labels satisfy the pod's ``nodeSelector``. Pods are taken in
(creationTimestamp, namespace, name) order and nodes by name, so a burst of
pods spreads evenly. Each pass is one coalesced run of the shared runner;
``spec.nodeName`` is written only if it is still empty (the kubelet's
"binding" in one field).
"""

from __future__ import annotations

import logging

from shiftnet.api import Node, Pod
from shiftnet.client import Client
from shiftnet.informer import Informers
from shiftnet.master import metrics
from shiftnet.runner import CoalescingRunner

log = logging.getLogger(__name__)


def schedulable(node: Node) -> bool:
    if not node.ready or node.spec.unschedulable or node.metadata.deletion_timestamp:
        return False
    return not any(
        c.type == "NetworkUnavailable" and c.status == "True" for c in node.status.conditions
    )


def fits(pod: Pod, node: Node) -> bool:
    labels = node.metadata.labels
    return all(labels.get(k) == v for k, v in pod.spec.node_selector.items())


def unscheduled(pod: Pod) -> bool:
    return (
        not pod.spec.node_name
        and not pod.metadata.deletion_timestamp
        and pod.status.phase not in ("Succeeded", "Failed")
    )


def plan(
    pods: list[Pod], nodes: list[Node], start: int = 0
) -> tuple[dict[tuple[str, str], str], int]:
    """Pure: which node each unscheduled pod goes to, round robin from ``start``.

    Returns (pod key -> node name, next start). Pods no ready node fits are left out.
    """
    ready = sorted((n for n in nodes if schedulable(n)), key=lambda n: n.name)
    out: dict[tuple[str, str], str] = {}
    if not ready:
        return out, start
    todo = sorted(
        (p for p in pods if unscheduled(p)),
        key=lambda p: (p.metadata.creation_timestamp or "", p.key),
    )
    turn = start
    for pod in todo:
        for i in range(len(ready)):
            node = ready[(turn + i) % len(ready)]
            if fits(pod, node):
                out[pod.key] = node.name
                turn = turn + i + 1
                break
    return out, turn % len(ready)


class Scheduler:
    def __init__(self, client: Client, informers: Informers) -> None:
        self.client = client
        self.pods = informers.informer(Pod)
        self.nodes = informers.informer(Node)
        self.pods.add_handler(self._on_pod)
        self.nodes.add_handler(self._on_node)
        self.runner = CoalescingRunner(self._run, min_interval=0.02, name="scheduler")
        self._turn = 0
        self.bound = 0

    async def start(self) -> None:
        await self.runner.start()
        self.runner.kick()

    async def stop(self) -> None:
        await self.runner.stop()

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        if new is not None and unscheduled(new):
            self.runner.kick()

    def _on_node(self, etype: str, old: Node | None, new: Node | None) -> None:
        if new is not None and schedulable(new) != (old is not None and schedulable(old)):
            self.runner.kick()

    async def _run(self) -> None:
        assignment, self._turn = plan(self.pods.list(), self.nodes.list(), self._turn)
        for (ns, name), node in sorted(assignment.items()):

            def bind(p: Pod, node: str = node) -> Pod | None:
                if not unscheduled(p):
                    return None
                p.spec.node_name = node
                return p

            if await self.client.mutate(Pod, ns, name, bind) is not None:
                self.bound += 1
                metrics.PODS_SCHEDULED.inc()
                log.info("pod scheduled pod=%s/%s node=%s", ns, name, node)
