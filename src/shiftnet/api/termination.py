"""Graceful pod deletion, as Kubernetes' API server decides it.

Deleting a pod that runs on a live node does not remove the object: the
server sets ``metadata.deletionTimestamp`` (now + the grace period) and
``deletionGracePeriodSeconds``, the node agent stops the pod's processes
(SIGTERM, then SIGKILL when the grace period is over) and only then removes
the object. Meanwhile the pod stays in its Service's EndpointSlices as
``serving`` and ``terminating``, so a proxy can finish what it has started.

A pod is removed at once when nothing would stop it gracefully: a grace
period of 0, a pod not scheduled or already finished, or a node that does not
exist or is not Ready (its agent is gone; Kubernetes' pod garbage collector
removes such pods too). Pure: the caller passes the clock.
"""

from __future__ import annotations

import datetime as dt

from shiftnet.api.core import Node, Pod

FINISHED_PHASES = ("Succeeded", "Failed")


def rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def graceful_deletion(
    pod: Pod, node: Node | None, grace_period: int | None, now: dt.datetime
) -> Pod | None:
    """The pod to store in place of deleting it, or None when it is to be removed now.

    ``grace_period`` is what the request asked (``gracePeriodSeconds``); None
    means the pod's ``spec.terminationGracePeriodSeconds``. A second delete of
    a terminating pod may shorten its grace period, never lengthen it: the pod
    is returned unchanged then.
    """
    grace = pod.spec.termination_grace_period_seconds if grace_period is None else grace_period
    if grace <= 0 or not pod.spec.node_name or pod.status.phase in FINISHED_PHASES:
        return None
    if node is None or not node.ready or node.metadata.name != pod.spec.node_name:
        return None
    deadline = now + dt.timedelta(seconds=grace)
    out = pod.model_copy(deep=True)
    current = pod.metadata.deletion_timestamp
    if current and (grace_period is None or rfc3339(deadline) >= current):
        return out
    out.metadata.deletion_timestamp = rfc3339(deadline)
    out.metadata.deletion_grace_period_seconds = grace
    return out


def terminating(pod: Pod) -> bool:
    """Deletion requested: the pod is on its way out (its processes may still serve)."""
    return bool(pod.metadata.deletion_timestamp)
