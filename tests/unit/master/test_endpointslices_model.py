"""The pure EndpointSlice model: conditions, the 100-endpoint split, small changes, order."""

from __future__ import annotations

import random

from tests.support.master import pod, service

from shiftnet.api import EndpointSlice, Pod, Service
from shiftnet.api.validation import validate
from shiftnet.master.endpointslices_model import (
    CONTROLLER_NAME,
    MAX_ENDPOINTS_PER_SLICE,
    SlicePlan,
    desired_groups,
    plan_slices,
)

WEB = [{"name": "web", "containerPort": 8080}]
PORTS = [{"name": "http", "port": 80, "targetPort": "web"}]


def web() -> Service:
    svc = service("web", selector={"app": "web"}, ports=PORTS)
    svc.metadata.uid = "svc-uid"
    svc.metadata.labels = {"team": "a"}
    return svc


def pods(n: int, start: int = 0) -> list[Pod]:
    return [
        pod(f"p{i}", f"127.10.{i // 200}.{i % 200 + 2}", labels={"app": "web"}, ports=WEB)
        for i in range(start, start + n)
    ]


def apply(plan: SlicePlan, existing: list[EndpointSlice]) -> list[EndpointSlice]:
    """What the store holds after the controller wrote ``plan`` (names as it gives them)."""
    by_name = {s.name: s for s in existing}
    for name in plan.delete:
        del by_name[name]
    for s in plan.update:
        by_name[s.name] = s
    for i, s in enumerate(plan.create):
        s = s.model_copy(deep=True)
        s.metadata.name = f"{s.metadata.generate_name}n{len(by_name)}x{i}"
        by_name[s.name] = s
    return sorted(by_name.values(), key=lambda s: s.name)


def addresses(slices: list[EndpointSlice]) -> list[list[str]]:
    return [[a for e in s.endpoints for a in e.addresses] for s in slices]


def test_a_slice_as_kubernetes_writes_it() -> None:
    plan = plan_slices(web(), pods(2), [])
    [es] = plan.create
    validate(es.model_copy(update={"metadata": es.metadata.model_copy(update={"name": "web-x"})}))
    assert es.metadata.generate_name == "web-"
    assert es.metadata.labels == {
        "endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME,
        "kubernetes.io/service-name": "web",
        "team": "a",
    }
    [owner] = es.metadata.owner_references or []
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Service",
        "web",
        "svc-uid",
        True,
    )
    assert es.address_type == "IPv4"
    assert [(p.name, p.port, p.protocol) for p in es.ports] == [("http", 8080, "TCP")]
    first = es.endpoints[0]
    assert first.addresses == ["127.10.0.2"]
    assert first.conditions.model_dump() == {"ready": True, "serving": True, "terminating": False}
    assert first.target_ref is not None and first.target_ref.name == "p0"
    assert first.node_name == "node-a"


def test_terminating_pods_stay_serving_and_terminating_not_ready() -> None:
    ending, gone_bad, starting = pods(3)
    ending.metadata.deletion_timestamp = "2026-01-01T00:00:30Z"
    gone_bad.metadata.deletion_timestamp = "2026-01-01T00:00:30Z"
    gone_bad.status.conditions[0].status = "False"
    starting.status.conditions[0].status = "False"
    [(_, eps)] = desired_groups(web(), [ending, gone_bad, starting]).items()
    got = [(e.addresses[0], e.conditions.model_dump()) for e in eps]
    assert got == [
        ("127.10.0.2", {"ready": False, "serving": True, "terminating": True}),
        ("127.10.0.3", {"ready": False, "serving": False, "terminating": True}),
        ("127.10.0.4", {"ready": False, "serving": False, "terminating": False}),
    ]


def test_publish_not_ready_addresses_makes_every_endpoint_ready() -> None:
    svc = web()
    svc.spec.publish_not_ready_addresses = True
    [p] = pods(1)
    p.status.conditions[0].status = "False"
    [(_, [e])] = desired_groups(svc, [p]).items()
    assert e.conditions.ready is True and e.conditions.serving is False


def test_250_endpoints_make_three_slices_of_at_most_100() -> None:
    slices = apply(plan_slices(web(), pods(250), []), [])
    assert sorted(len(s.endpoints) for s in slices) == [50, 100, 100]
    assert MAX_ENDPOINTS_PER_SLICE == 100


def test_changes_stay_small_endpoints_keep_their_slice() -> None:
    svc = web()
    slices = apply(plan_slices(svc, pods(250), []), [])
    before = addresses(slices)
    # one pod gone from the first slice, one new pod: one slice changes, nothing is created
    everyone = [p for p in pods(251) if p.name != "p5"]
    plan = plan_slices(svc, everyone, slices)
    assert (len(plan.update), plan.create, plan.delete) == (1, [], [])
    after = addresses(apply(plan, slices))
    moved = [a for b, c in zip(before, after, strict=True) if b != c for a in c]
    assert "127.10.1.52" in moved  # the new pod (251st) filled the room p5 left
    assert plan_slices(svc, everyone, apply(plan, slices)).empty


def test_no_endpoints_keeps_one_placeholder_and_a_selectorless_service_none() -> None:
    svc = web()
    slices = apply(plan_slices(svc, [], []), [])
    [placeholder] = slices
    assert (placeholder.endpoints, placeholder.ports) == ([], [])
    assert plan_slices(svc, [], slices).empty
    filled = apply(plan_slices(svc, pods(3), slices), slices)
    assert [len(s.endpoints) for s in filled] == [3]
    # as upstream, a slice to create takes over one to delete: never both at once
    assert filled[0].name == placeholder.name
    emptied = plan_slices(svc, [], filled)
    assert (emptied.create, emptied.delete) == ([], [])
    assert [s.name for s in emptied.update] == [filled[0].name]  # it becomes the placeholder
    assert [len(s.endpoints) for s in apply(emptied, filled)] == [0]
    svc.spec.selector = None
    assert plan_slices(svc, pods(3), filled).delete == [filled[0].name]


def test_user_slices_are_never_touched() -> None:
    user = EndpointSlice.model_validate(
        {
            "metadata": {
                "name": "web-mine",
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": "web"},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}],
        }
    )
    plan = plan_slices(web(), pods(1), [user])
    assert "web-mine" not in plan.delete + [s.name for s in plan.update]
    assert len(plan.create) == 1


def test_families_and_port_sets_get_their_own_slices() -> None:
    svc = web()
    mixed = pods(2)
    mixed[1].spec.containers[0].ports[0].container_port = 9090
    v6 = pod("six", "fd00::5", labels={"app": "web"}, ports=WEB)
    groups = desired_groups(svc, [*mixed, v6])
    assert sorted((f, [p[1] for p in ports]) for f, ports in groups) == [
        ("IPv4", [8080]),
        ("IPv4", [9090]),
        ("IPv6", [8080]),
    ]


def test_the_plan_is_byte_identical_whatever_the_input_order() -> None:
    svc = web()
    everyone = pods(230)
    everyone[7].metadata.deletion_timestamp = "2026-01-01T00:00:30Z"
    existing = apply(plan_slices(svc, pods(120, start=60), []), [])

    def dump(plan: SlicePlan) -> list[object]:
        return [
            [s.to_dict() for s in plan.create],
            [s.to_dict() for s in plan.update],
            plan.delete,
        ]

    want = dump(plan_slices(svc, everyone, existing))
    for seed in range(5):
        p, e = list(everyone), list(existing)
        random.Random(seed).shuffle(p)
        random.Random(seed).shuffle(e)
        assert dump(plan_slices(svc, p, e)) == want
