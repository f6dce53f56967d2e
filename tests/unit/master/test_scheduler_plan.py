"""The scheduler's pure plan: round robin over schedulable nodes, nodeSelector, order."""

from __future__ import annotations

from tests.support.master import node, pod

from shiftnet.api.base import Condition
from shiftnet.master.scheduler import plan, schedulable


def unscheduled(name: str, **kw):  # type: ignore[no-untyped-def]
    p = pod(name, None, node=None, phase="Pending", **kw)
    p.metadata.creation_timestamp = f"2026-01-01T00:00:{int(name[1:]):02d}Z"
    return p


def test_round_robin_over_ready_nodes_in_name_order() -> None:
    pods = [unscheduled(f"p{i}") for i in range(5)]
    nodes = [node("b"), node("a"), node("down", ready=False)]
    got, turn = plan(pods, nodes)
    assert got == {
        ("default", "p0"): "a",
        ("default", "p1"): "b",
        ("default", "p2"): "a",
        ("default", "p3"): "b",
        ("default", "p4"): "a",
    }
    # the next pass continues where this one stopped
    more, _ = plan([unscheduled("p9")], nodes, turn)
    assert more == {("default", "p9"): "b"}


def test_scheduled_and_finished_pods_are_left_alone() -> None:
    done = unscheduled("p1")
    done.status.phase = "Succeeded"
    placed = pod("p2", "127.10.0.2", node="a")
    assert plan([done, placed], [node("a")])[0] == {}


def test_no_node_no_plan_and_unschedulable_or_network_unavailable_nodes_skipped() -> None:
    assert plan([unscheduled("p1")], [])[0] == {}
    cordoned = node("c")
    cordoned.spec.unschedulable = True
    no_net = node("n")
    no_net.status.conditions.append(Condition(type="NetworkUnavailable", status="True"))
    assert not schedulable(cordoned) and not schedulable(no_net)
    assert plan([unscheduled("p1")], [cordoned, no_net, node("z")])[0] == {("default", "p1"): "z"}


def test_node_selector() -> None:
    a, b = node("a"), node("b")
    b.metadata.labels["disk"] = "ssd"
    p = unscheduled("p1")
    p.spec.node_selector = {"disk": "ssd"}
    q = unscheduled("p2")
    q.spec.node_selector = {"disk": "tape"}
    assert plan([p, q], [a, b])[0] == {("default", "p1"): "b"}
