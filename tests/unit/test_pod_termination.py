"""Graceful pod deletion decided as Kubernetes' API server does (pure)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from shiftnet.api import Node, Pod
from shiftnet.api.termination import graceful_deletion, terminating

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def pod(**spec: Any) -> Pod:
    body = {"nodeName": "node-a", "terminationGracePeriodSeconds": 30, "containers": []}
    body.update(spec)
    return Pod.model_validate({"metadata": {"name": "web", "namespace": "default"}, "spec": body})


def node(ready: bool = True, name: str = "node-a") -> Node:
    status = "True" if ready else "False"
    return Node.model_validate(
        {
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": status}]},
        }
    )


def test_a_pod_on_a_ready_node_is_marked_for_its_grace_period() -> None:
    marked = graceful_deletion(pod(), node(), None, NOW)
    assert marked is not None and terminating(marked)
    assert marked.metadata.deletion_timestamp == "2026-01-02T03:04:35Z"
    assert marked.metadata.deletion_grace_period_seconds == 30


def test_the_request_grace_period_wins_over_the_pods() -> None:
    marked = graceful_deletion(pod(), node(), 3, NOW)
    assert marked is not None
    assert marked.metadata.deletion_timestamp == "2026-01-02T03:04:08Z"
    assert marked.metadata.deletion_grace_period_seconds == 3


@pytest.mark.parametrize(
    ("the_pod", "the_node", "grace"),
    [
        (pod(), node(), 0),  # --grace-period=0
        (pod(terminationGracePeriodSeconds=0), node(), None),
        (pod(nodeName=None), None, None),  # never scheduled
        (pod(), None, None),  # its node does not exist: nobody would stop it
        (pod(), node(ready=False), None),  # its agent is gone
        (pod(), node(name="node-b"), None),
    ],
)
def test_removed_at_once_when_nothing_would_stop_it_gracefully(
    the_pod: Pod, the_node: Node | None, grace: int | None
) -> None:
    assert graceful_deletion(the_pod, the_node, grace, NOW) is None


def test_a_finished_pod_is_removed_at_once() -> None:
    done = pod()
    done.status.phase = "Succeeded"
    assert graceful_deletion(done, node(), None, NOW) is None


def test_a_second_delete_may_shorten_the_grace_period_never_lengthen_it() -> None:
    first = graceful_deletion(pod(), node(), 10, NOW)
    assert first is not None
    later = NOW + dt.timedelta(seconds=1)
    same = graceful_deletion(first, node(), None, later)
    assert same is not None and same.metadata.deletion_timestamp == "2026-01-02T03:04:15Z"
    longer = graceful_deletion(first, node(), 60, later)
    assert longer is not None and longer.metadata.deletion_timestamp == "2026-01-02T03:04:15Z"
    shorter = graceful_deletion(first, node(), 2, later)
    assert shorter is not None and shorter.metadata.deletion_timestamp == "2026-01-02T03:04:08Z"
    assert graceful_deletion(first, node(), 0, later) is None
