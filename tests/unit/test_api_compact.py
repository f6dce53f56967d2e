"""Compact cached objects: equal values, shared fields sets and strings, bounded table."""

from __future__ import annotations

import copy

from shiftnet.api import Endpoints, Route, Service
from shiftnet.api.compact import COMPACT, PRUNE_FLOOR, Compactor


def raw_route(name: str) -> dict:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": {"app": "web"},
        },
        "spec": {"host": f"{name}.example.com", "to": {"kind": "Service", "name": "web"}},
        "status": {
            "ingress": [
                {
                    "host": f"{name}.example.com",
                    "routerName": "router",
                    "conditions": [{"type": "Admitted", "status": "True"}],
                }
            ]
        },
    }


def test_compact_objects_equal_plain_ones_and_dump_the_same() -> None:
    for cls, raw in (
        (Route, raw_route("a")),
        (
            Service,
            {
                "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
            },
        ),
        (
            Endpoints,
            {
                "metadata": {"name": "web", "namespace": "shop"},
                "subsets": [
                    {"addresses": [{"ip": "10.1.0.2"}], "ports": [{"name": "http", "port": 8080}]}
                ],
            },
        ),
    ):
        plain = cls.model_validate(copy.deepcopy(raw))
        compact = cls.model_validate(Compactor().strings(copy.deepcopy(raw)), context=COMPACT)
        assert compact == plain
        assert compact.to_dict() == plain.to_dict()


def test_instances_share_one_fields_set_per_class_and_stay_assignable() -> None:
    a = Route.model_validate(raw_route("a"), context=COMPACT)
    b = Route.model_validate(raw_route("b"), context=COMPACT)
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert a.metadata.__pydantic_fields_set__ is b.metadata.__pydantic_fields_set__
    ia, ib = a.status.ingress[0], b.status.ingress[0]
    assert ia.__pydantic_fields_set__ is ib.__pydantic_fields_set__
    assert a.metadata.__pydantic_fields_set__ >= {"name", "namespace", "labels", "uid"}
    a.metadata.name = "renamed"  # pydantic adds the name to the (shared) set: no harm
    assert a.metadata.name == "renamed" and b.metadata.name == "b"
    copied = b.model_copy(deep=True)
    copied.spec.host = "other.example.com"
    assert b.spec.host == "b.example.com"
    # Objects decoded without the context keep pydantic's own per-instance sets.
    plain = Route.model_validate(raw_route("c"))
    assert plain.metadata.__pydantic_fields_set__ is not a.metadata.__pydantic_fields_set__


def test_repeated_strings_are_shared_unique_ones_are_not_interned() -> None:
    c = Compactor()
    first = c.strings(raw_route("a"))
    second = c.strings(raw_route("b"))
    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]
    assert first["spec"]["to"]["name"] is second["spec"]["to"]["name"]
    size = len(c)
    c.strings({"metadata": {"uid": "u-unique", "resourceVersion": "123456"}})
    assert len(c) == size  # uid and resourceVersion never repeat: not kept


def test_the_string_table_is_bounded() -> None:
    c = Compactor(prune_at=50)
    for i in range(500):
        c.strings({"metadata": {"name": f"n{i}"}, "spec": {"host": f"h{i}"}})
    assert len(c) <= 52


def test_strings_no_object_uses_are_forgotten_and_live_ones_stay_shared() -> None:
    c = Compactor()
    kept = [c.strings(raw_route(f"kept{i}")) for i in range(20)]
    after_first = len(c)
    for i in range(5000):  # objects decoded and dropped again: churn
        c.strings(raw_route(f"gone{i}"))
    # 5,000 names and hosts went through; the table holds about what is alive
    assert len(c) <= PRUNE_FLOOR + after_first
    c.prune()
    assert len(c) <= after_first
    assert not [s for s in c._table if s.startswith("gone")]
    again = c.strings(raw_route("kept7"))
    assert again["metadata"]["name"] is kept[7]["metadata"]["name"]
    assert again["metadata"]["namespace"] is kept[0]["metadata"]["namespace"]
