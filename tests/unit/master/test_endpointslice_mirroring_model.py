"""The pure mirroring model: which Endpoints are mirrored, the canonical subsets, the cap, order."""

from __future__ import annotations

import random
from typing import Any

from tests.support.master import service

from shiftnet.api import Endpoints, EndpointSlice, Service, parse_object
from shiftnet.api.validation import validate
from shiftnet.master.endpointslice_mirroring_model import (
    CONTROLLER_NAME,
    MirrorPlan,
    desired_groups,
    plan_mirror,
    should_mirror,
)
from shiftnet.master.endpointslices_model import CONTROLLER_NAME as SLICE_CONTROLLER


def external() -> Service:
    return service("ext", ports=[{"name": "http", "port": 80}])


def endpoints(subsets: list[dict[str, Any]], **meta: Any) -> Endpoints:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "ext", "namespace": "default", "uid": "ep-uid", **meta},
            "subsets": subsets,
        }
    )
    assert isinstance(obj, Endpoints)
    return obj


def addrs(*ips: str) -> list[dict[str, str]]:
    return [{"ip": ip} for ip in ips]


HTTP = [{"name": "http", "port": 8080}]


def apply(plan: MirrorPlan, existing: list[EndpointSlice]) -> list[EndpointSlice]:
    """What the store holds after the controller wrote ``plan``."""
    by_name = {s.name: s for s in existing}
    for name in plan.delete:
        del by_name[name]
    for s in plan.update:
        assert s.name in by_name, "an update names a slice that exists"
        by_name[s.name] = s
    for i, s in enumerate(plan.create):
        s = s.model_copy(deep=True)
        s.metadata.name = f"{s.metadata.generate_name}n{len(by_name)}x{i}"
        by_name[s.name] = s
    return sorted(by_name.values(), key=lambda s: s.name)


def seen(slices: list[EndpointSlice]) -> set[tuple[str, str, tuple[object, ...], bool]]:
    return {
        (
            s.address_type,
            a,
            tuple(sorted((p.name, p.port, p.protocol) for p in s.ports)),
            e.conditions.is_ready,
        )
        for s in slices
        for e in s.endpoints
        for a in e.addresses
    }


def test_a_mirrored_slice_as_kubernetes_writes_it() -> None:
    ep = endpoints(
        [
            {
                "addresses": [{"ip": "10.1.0.2", "hostname": "a", "nodeName": "n1"}],
                "notReadyAddresses": addrs("10.1.0.3"),
                "ports": HTTP,
            }
        ],
        labels={"team": "a", "kubernetes.io/service-name": "other"},
        annotations={
            "note": "kept",
            "endpoints.kubernetes.io/last-change-trigger-time": "2026-01-01T00:00:00Z",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
    )
    plan = plan_mirror(external(), ep, [])
    [es] = plan.create
    assert not plan.update and not plan.delete
    validate(es.model_copy(update={"metadata": es.metadata.model_copy(update={"name": "ext-x"})}))
    assert es.metadata.generate_name == "ext-"
    assert es.metadata.labels == {
        "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io",
        "kubernetes.io/service-name": "ext",
        "team": "a",
    }
    assert es.metadata.annotations == {"note": "kept"}
    [owner] = es.metadata.owner_references or []
    assert (owner.api_version, owner.kind, owner.name, owner.uid) == (
        "v1",
        "Endpoints",
        "ext",
        "ep-uid",
    )
    assert owner.controller and owner.block_owner_deletion
    assert es.address_type == "IPv4"
    assert [(p.name, p.port, p.protocol) for p in es.ports] == [("http", 8080, "TCP")]
    body = [e.to_dict() for e in es.endpoints]
    assert body == [
        {
            "addresses": ["10.1.0.2"],
            "conditions": {"ready": True},
            "hostname": "a",
            "nodeName": "n1",
        },
        {"addresses": ["10.1.0.3"], "conditions": {"ready": False}},
    ]


def test_only_user_endpoints_of_a_selectorless_service_are_mirrored() -> None:
    ep = endpoints([{"addresses": addrs("10.1.0.2"), "ports": HTTP}])
    assert should_mirror(external(), ep)
    assert not should_mirror(None, ep)  # no Service
    assert not should_mirror(external(), None)
    assert not should_mirror(service("ext", selector={"app": "x"}), ep)
    skip = endpoints(
        ep.to_dict()["subsets"], labels={"endpointslice.kubernetes.io/skip-mirror": "true"}
    )
    assert not should_mirror(external(), skip)
    other = endpoints(
        ep.to_dict()["subsets"], labels={"endpointslice.kubernetes.io/skip-mirror": "no"}
    )
    assert should_mirror(external(), other)
    lease = endpoints(
        ep.to_dict()["subsets"], annotations={"control-plane.alpha.kubernetes.io/leader": "{}"}
    )
    assert not should_mirror(external(), lease)


def test_slices_of_endpoints_no_longer_mirrored_are_deleted_and_others_never_touched() -> None:
    ep = endpoints([{"addresses": addrs("10.1.0.2"), "ports": HTTP}])
    existing = apply(plan_mirror(external(), ep, []), [])
    theirs = existing[0].model_copy(deep=True)
    theirs.metadata.name = "ext-user"
    theirs.metadata.labels["endpointslice.kubernetes.io/managed-by"] = "someone-else"
    ctrl = existing[0].model_copy(deep=True)
    ctrl.metadata.name = "ext-ctrl"
    ctrl.metadata.labels["endpointslice.kubernetes.io/managed-by"] = SLICE_CONTROLLER
    all_three = [*existing, theirs, ctrl]
    mine = existing[0].name
    assert plan_mirror(external(), ep, all_three).empty  # up to date; the others ignored
    for svc, e in [
        (service("ext", selector={"app": "x"}), ep),
        (None, ep),
        (external(), None),
        (external(), endpoints([], labels={"endpointslice.kubernetes.io/skip-mirror": "true"})),
    ]:
        plan = plan_mirror(svc, e, all_three)
        assert (plan.delete, plan.create, plan.update) == ([mine], [], [])
    gone = plan_mirror(external(), endpoints([]), all_three)  # no addresses left: no slice
    assert gone.delete == [mine] and not gone.create and not gone.update


def test_one_slice_per_family_and_port_set_in_canonical_form() -> None:
    ep = endpoints(
        [
            # 10.1.0.2 offers http and metrics, ready on both: one subset with two ports
            {"addresses": addrs("10.1.0.2", "fd00::2"), "ports": HTTP},
            {"addresses": addrs("10.1.0.2"), "ports": [{"name": "metrics", "port": 9100}]},
            # not ready on http wins over the ready above
            {"notReadyAddresses": addrs("fd00::2"), "ports": HTTP},
            {"addresses": addrs("10.1.0.9")},  # no ports: kept, a slice without ports
            {"addresses": addrs("FD00:0::3"), "ports": HTTP},
        ]
    )
    wanted, invalid, over = desired_groups(ep)
    assert (invalid, over) == (0, 0)
    flat = {g: [(e.addresses[0], e.conditions.ready) for e in eps] for g, eps in wanted.items()}
    assert flat == {
        ("IPv4", ()): [("10.1.0.9", True)],
        ("IPv4", (("http", 8080, "TCP"),)): [("10.1.0.2", True)],
        ("IPv4", (("metrics", 9100, "TCP"),)): [("10.1.0.2", True)],
        ("IPv6", (("http", 8080, "TCP"),)): [("fd00::2", False), ("fd00::3", True)],
    }
    plan = plan_mirror(external(), ep, [])
    assert len(plan.create) == 4
    for es in plan.create:
        validate(es.model_copy(update={"metadata": es.metadata.model_copy(update={"name": "e-x"})}))


def test_at_most_max_per_subset_ready_first_the_rest_counted() -> None:
    ready = [f"10.2.{i // 250}.{i % 250 + 1}" for i in range(8)]
    ep = endpoints(
        [
            {"addresses": addrs(*ready), "notReadyAddresses": addrs("10.3.0.1"), "ports": HTTP},
            {"addresses": addrs("10.4.0.1"), "ports": [{"port": 53, "protocol": "UDP"}]},
        ]
    )
    plan = plan_mirror(external(), ep, [], max_per_subset=5)
    assert (plan.invalid, plan.over_capacity) == (0, 4)
    by_port = {es.ports[0].port: es for es in plan.create}
    # the first five by IP text (upstream's canonical order), all ready; the not-ready one left out
    assert [e.addresses[0] for e in by_port[8080].endpoints] == sorted(ready)[:5]
    assert all(e.conditions.ready for e in by_port[8080].endpoints)
    assert [e.addresses[0] for e in by_port[53].endpoints] == ["10.4.0.1"]


def test_addresses_that_are_not_ips_are_counted_not_mirrored() -> None:
    ep = endpoints([{"addresses": addrs("10.1.0.2"), "ports": HTTP}])
    ep.subsets[0].addresses.append(ep.subsets[0].addresses[0].model_copy(update={"ip": "db.x"}))
    plan = plan_mirror(external(), ep, [])
    assert plan.invalid == 1
    assert [e.addresses for es in plan.create for e in es.endpoints] == [["10.1.0.2"]]


def test_changes_update_in_place_and_recycle_slices() -> None:
    ep = endpoints([{"addresses": addrs("10.1.0.2"), "ports": HTTP}])
    store = apply(plan_mirror(external(), ep, []), [])
    [first] = store
    ep2 = endpoints([{"addresses": addrs("10.1.0.2", "10.1.0.3"), "ports": HTTP}])
    plan = plan_mirror(external(), ep2, store)
    assert not plan.create and not plan.delete and [s.name for s in plan.update] == [first.name]
    assert plan.update[0].metadata.resource_version == first.metadata.resource_version
    store = apply(plan, store)
    # the port changes: the old slice is reused for the new group, not deleted and created
    ep3 = endpoints([{"addresses": addrs("10.1.0.2"), "ports": [{"name": "http", "port": 81}]}])
    plan = plan_mirror(external(), ep3, store)
    assert not plan.create and not plan.delete and [s.name for s in plan.update] == [first.name]
    store = apply(plan, store)
    assert [p.port for p in store[0].ports] == [81]
    # labels or annotations of the Endpoints change: the slice follows
    ep4 = endpoints(ep3.to_dict()["subsets"], labels={"tier": "db"}, annotations={"a": "b"})
    plan = plan_mirror(external(), ep4, store)
    [es] = plan.update
    assert es.metadata.labels["tier"] == "db" and es.metadata.annotations == {"a": "b"}
    store = apply(plan, store)
    assert plan_mirror(external(), ep4, store).empty
    # a second slice of one group (two writers raced) goes
    twin = store[0].model_copy(deep=True)
    twin.metadata.name = "ext-zzzzz"
    plan = plan_mirror(external(), ep4, [*store, twin])
    assert plan.delete == ["ext-zzzzz"] and not plan.update and not plan.create


def test_an_endpoints_being_deleted_gets_no_new_slice() -> None:
    ep = endpoints(
        [{"addresses": addrs("10.1.0.2"), "ports": HTTP}],
        deletionTimestamp="2030-01-01T00:00:00Z",
    )
    assert plan_mirror(external(), ep, []).empty


def test_the_same_inputs_in_any_order_give_the_same_plan() -> None:
    subsets: list[dict[str, Any]] = [
        {
            "addresses": addrs(*(f"10.5.0.{i}" for i in range(1, 40))),
            "notReadyAddresses": addrs("10.5.1.1", "fd00::9"),
            "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2, "protocol": "UDP"}],
        },
        {"addresses": addrs("10.5.0.3", "fd00::1"), "ports": [{"name": "c", "port": 3}]},
        {"notReadyAddresses": addrs("10.5.0.4"), "ports": [{"name": "a", "port": 1}]},
        {"addresses": addrs("10.6.0.1")},
    ]
    old = endpoints(
        [
            {"addresses": addrs("10.5.0.1"), "ports": [{"name": "a", "port": 1}]},
            {"addresses": addrs("fd00::1"), "ports": [{"name": "z", "port": 9}]},
            {"addresses": addrs("10.7.0.1"), "ports": [{"name": "y", "port": 8}]},
        ]
    )
    existing = apply(plan_mirror(external(), old, []), [])
    reference = plan_mirror(external(), endpoints(subsets), existing, max_per_subset=50)
    assert reference.update and reference.create  # recycled and new slices both
    want = (
        [s.to_dict() for s in reference.create],
        [s.to_dict() for s in reference.update],
        reference.delete,
        reference.over_capacity,
    )
    for seed in range(20):
        rng = random.Random(seed)
        shuffled = [dict(s) for s in subsets]
        rng.shuffle(shuffled)
        for s in shuffled:
            for k in ("addresses", "notReadyAddresses", "ports"):
                if k in s:
                    s[k] = rng.sample(s[k], len(s[k]))
        ex = list(existing)
        rng.shuffle(ex)
        plan = plan_mirror(external(), endpoints(shuffled), ex, max_per_subset=50)
        got = (
            [s.to_dict() for s in plan.create],
            [s.to_dict() for s in plan.update],
            plan.delete,
            plan.over_capacity,
        )
        assert got == want, f"seed {seed}"
    # and what it mirrors is what the Endpoints says, in canonical form
    after = apply(reference, existing)
    # 10.5.0.4 is not ready on a only: a and b no longer share a subset
    assert ("IPv4", "10.5.0.4", (("a", 1, "TCP"),), False) in seen(after)
    assert ("IPv4", "10.5.0.4", (("b", 2, "UDP"),), True) in seen(after)
    assert ("IPv6", "fd00::9", (("b", 2, "UDP"),), False) in seen(after)
    assert ("IPv4", "10.6.0.1", (), True) in seen(after)
    assert len(seen(after)) == 41 + 41 + 2 + 1
    assert all(
        s.metadata.labels["endpointslice.kubernetes.io/managed-by"] == CONTROLLER_NAME
        for s in after
    )
