"""Deleting a pod: mark it terminating (its node agent finishes the job) or remove it now.

The one place both the typed :class:`~shiftnet.client.Client` and the API
server's DELETE go through for pods, so ``shiftnet delete pod`` and
``kubectl delete pod`` behave alike. The decision is the pure
:func:`shiftnet.api.termination.graceful_deletion`; this module reads the pod
and its node and writes the result, retrying when the pod changed meanwhile.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any, cast

from shiftnet.api import Node, Pod
from shiftnet.api.termination import graceful_deletion
from shiftnet.errors import Conflict, NotFound
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

ATTEMPTS = 20


def applies_grace_itself(store: Store) -> bool:
    """A Kubernetes API behind the ``kube`` store applies grace periods on its own."""
    return store.url.startswith("kube://")


async def delete_pod(
    store: Store,
    namespace: str,
    name: str,
    *,
    grace_period: int | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """Delete as Kubernetes does; returns the stored pod (terminating) or its last state."""
    if applies_grace_itself(store):
        return await store.delete(Pod.RESOURCE, namespace, name, resource_version)
    for _ in range(ATTEMPTS):
        raw = await store.get(Pod.RESOURCE, namespace, name)
        rv = str((raw.get("metadata") or {}).get("resourceVersion") or "")
        if resource_version and resource_version != rv:
            raise Conflict(Pod.RESOURCE, namespace, name)
        pod = Pod.model_validate(raw)
        node: Node | None = None
        if pod.spec.node_name:
            try:
                node = Node.model_validate(await store.get(Node.RESOURCE, None, pod.spec.node_name))
            except NotFound:
                node = None
        marked = graceful_deletion(pod, node, grace_period, dt.datetime.now(dt.UTC))
        try:
            if marked is None:
                return await store.delete(Pod.RESOURCE, namespace, name, rv)
            if marked.metadata.deletion_timestamp == pod.metadata.deletion_timestamp:
                return raw  # already terminating, no shorter grace asked
            body = marked.to_dict()
            body["metadata"]["resourceVersion"] = rv
            stored = await store.update(Pod.RESOURCE, body)
            log.info(
                "pod terminating pod=%s/%s grace=%s deadline=%s",
                namespace,
                name,
                marked.metadata.deletion_grace_period_seconds,
                marked.metadata.deletion_timestamp,
            )
            return stored
        except Conflict:
            if resource_version:
                raise
            continue  # changed meanwhile: decide again on the new state
    raise Conflict(Pod.RESOURCE, namespace, name, f"gave up after {ATTEMPTS} attempts")


async def remove_stopped(
    store: Store, namespace: str, name: str, resource_version: str
) -> dict[str, Any]:
    """A node agent's last step: the pod's processes are gone, remove this version of it.

    As a kubelet's delete with ``gracePeriodSeconds: 0``: through a Kubernetes
    API (``kube`` store) a plain delete of a terminating pod would change nothing.
    """
    if applies_grace_itself(store):
        delete = cast(Any, store).delete  # KubeStore.delete takes grace_period_seconds
        stored: dict[str, Any] = await delete(
            Pod.RESOURCE, namespace, name, resource_version, grace_period_seconds=0
        )
        return stored
    return await store.delete(Pod.RESOURCE, namespace, name, resource_version)
