"""Admission: shards, hosts, policy, TLS checks and host claims (oldest wins)."""

from __future__ import annotations

import dataclasses

from tests.support import routes as f
from tests.support.tls import TestCA

from shiftnet.api import Namespace
from shiftnet.api.selectors import parse_selector
from shiftnet.router.admission import (
    EXTENDED_VALIDATION_FAILED,
    HOST_ALREADY_CLAIMED,
    INVALID_HOST,
    NO_HOST_VALUE,
    ROUTE_NOT_ADMITTED,
    admit,
)
from shiftnet.router.config import RouterConfig

CONFIG = RouterConfig()


def reasons(result: object) -> dict[tuple[str, str], str | None]:
    return {k: d.reason for k, d in result.decisions.items()}  # type: ignore[attr-defined]


def test_oldest_route_wins_the_host_and_the_loser_names_it() -> None:
    old = f.route("old", "app.example.com", created="2026-01-01T00:00:00Z")
    new = f.route("new", "app.example.com", created="2026-01-02T00:00:00Z")
    result = admit([new, old], [], CONFIG)
    assert reasons(result) == {("ns", "new"): HOST_ALREADY_CLAIMED, ("ns", "old"): None}
    message = result.decision("ns", "new").message  # type: ignore[union-attr]
    assert "ns/old" in message and "older" in message
    assert [r.metadata.name for r in result.admitted] == ["old"]


def test_same_host_other_path_in_same_namespace_is_admitted() -> None:
    a = f.route("a", "app.example.com", created="2026-01-01T00:00:00Z")
    b = f.route("b", "app.example.com", path="/api", created="2026-01-02T00:00:00Z")
    assert reasons(admit([a, b], [], CONFIG)) == {("ns", "a"): None, ("ns", "b"): None}


def test_other_namespace_is_rejected_unless_ownership_check_disabled() -> None:
    a = f.route("a", "app.example.com", namespace="one", created="2026-01-01T00:00:00Z")
    b = f.route("b", "app.example.com", namespace="two", path="/x", created="2026-01-02T00:00:00Z")
    result = admit([a, b], [], CONFIG)
    assert result.decision("two", "b").reason == HOST_ALREADY_CLAIMED  # type: ignore[union-attr]
    assert 'namespace "one"' in result.decision("two", "b").message  # type: ignore[union-attr]
    relaxed = dataclasses.replace(CONFIG, disable_namespace_ownership_check=True)
    assert reasons(admit([a, b], [], relaxed)) == {("one", "a"): None, ("two", "b"): None}


def test_winner_deleted_next_route_is_admitted_by_itself() -> None:
    routes = [
        f.route(f"r{i}", "app.example.com", created=f"2026-01-0{i}T00:00:00Z", uid=f"u{i}")
        for i in (1, 2, 3)
    ]
    assert [r.metadata.name for r in admit(routes, [], CONFIG).admitted] == ["r1"]
    assert [r.metadata.name for r in admit(routes[1:], [], CONFIG).admitted] == ["r2"]


def test_same_timestamp_uid_breaks_the_tie() -> None:
    a = f.route("a", "app.example.com", uid="b-uid")
    b = f.route("b", "app.example.com", uid="a-uid")
    assert [r.metadata.name for r in admit([a, b], [], CONFIG).admitted] == ["b"]


def test_passthrough_cannot_share_its_host_with_another_tls_route() -> None:
    edge = f.route(
        "edge", "app.example.com", tls={"termination": "edge"}, created="2026-01-01T00:00:00Z"
    )
    pt = f.route(
        "pt",
        "app.example.com",
        path="",
        tls={"termination": "passthrough"},
        created="2026-01-02T00:00:00Z",
    )
    result = admit([edge, pt], [], CONFIG)
    assert result.decision("ns", "pt").reason == HOST_ALREADY_CLAIMED  # type: ignore[union-attr]


def test_host_problems() -> None:
    no_host = f.route("nohost")
    no_host = no_host.model_copy(update={"spec": no_host.spec.model_copy(update={"host": ""})})
    bad = f.route("bad", "Not_A_Host!")
    result = admit([no_host, bad], [], CONFIG)
    assert result.decision("ns", "nohost").reason == NO_HOST_VALUE  # type: ignore[union-attr]
    assert result.decision("ns", "bad").reason == INVALID_HOST  # type: ignore[union-attr]


def test_subdomain_template_gives_a_host() -> None:
    route = f.route("web")
    route = route.model_copy(update={"spec": route.spec.model_copy(update={"host": ""})})
    config = dataclasses.replace(CONFIG, subdomain_template="${name}-${namespace}.apps.test")
    assert admit([route], [], config).decision("ns", "web").host == "web-ns.apps.test"  # type: ignore[union-attr]


def test_wildcards_and_domains_policy() -> None:
    wild = f.route("w", "x.apps.example.com", wildcard=True)
    assert admit([wild], [], CONFIG).decision("ns", "w").reason == ROUTE_NOT_ADMITTED  # type: ignore[union-attr]
    allowed = dataclasses.replace(CONFIG, allow_wildcard_routes=True)
    assert admit([wild], [], allowed).decision("ns", "w").reason is None  # type: ignore[union-attr]
    denied = dataclasses.replace(CONFIG, denied_domains=("example.com",))
    assert (
        admit([f.route("a", "a.example.com")], [], denied)
        .decision(  # type: ignore[union-attr]
            "ns", "a"
        )
        .reason
        == ROUTE_NOT_ADMITTED
    )
    only = dataclasses.replace(CONFIG, allowed_domains=("example.org",))
    assert (
        admit([f.route("a", "a.example.com")], [], only)
        .decision(  # type: ignore[union-attr]
            "ns", "a"
        )
        .reason
        == ROUTE_NOT_ADMITTED
    )


def test_shards_by_route_and_namespace_labels() -> None:
    mine = f.route("mine", "a.example.com", labels={"shard": "a"}, namespace="team")
    other = f.route("other", "b.example.com", labels={"shard": "b"}, namespace="team")
    config = dataclasses.replace(CONFIG, route_labels=parse_selector("shard=a"))
    assert set(admit([mine, other], [], config).decisions) == {("team", "mine")}
    ns = Namespace.model_validate({"metadata": {"name": "team", "labels": {"env": "prod"}}})
    by_ns = dataclasses.replace(CONFIG, namespace_labels=parse_selector("env=dev"))
    assert admit([mine, other], [ns], by_ns).decisions == {}


def test_tls_checks() -> None:
    ca = TestCA()
    good = ca.issue("secure.example.com")
    other = ca.issue("other.example.com")
    ok = f.route(
        "ok",
        "secure.example.com",
        tls={
            "termination": "edge",
            "certificate": good.cert_pem,
            "key": good.key_pem,
            "caCertificate": ca.cert_pem,
        },
    )
    mismatch = f.route(
        "mismatch",
        "m.example.com",
        tls={"termination": "edge", "certificate": good.cert_pem, "key": other.key_pem},
    )
    wrong_ca = f.route(
        "wrongca",
        "w.example.com",
        tls={
            "termination": "edge",
            "certificate": good.cert_pem,
            "key": good.key_pem,
            "caCertificate": TestCA().cert_pem,
        },
    )
    result = admit([ok, mismatch, wrong_ca], [], CONFIG)
    assert reasons(result) == {
        ("ns", "ok"): None,
        ("ns", "mismatch"): EXTENDED_VALIDATION_FAILED,
        ("ns", "wrongca"): EXTENDED_VALIDATION_FAILED,
    }


def test_path_that_cannot_be_served_is_refused() -> None:
    route = f.route("p", "p.example.com", path="/é")
    assert admit([route], [], CONFIG).decision("ns", "p").reason == EXTENDED_VALIDATION_FAILED  # type: ignore[union-attr]


def test_status_entry_and_annotation_warnings() -> None:
    route = f.route(
        "a", "a.example.com", annotations={"haproxy.router.openshift.io/balance": "fastest"}
    )
    decision = admit([route], [], dataclasses.replace(CONFIG, name="public")).decision("ns", "a")
    assert decision is not None and decision.admitted
    ingress = decision.ingress
    assert ingress is not None and ingress.router_name == "public"
    assert ingress.conditions[0].status == "True"
    assert "haproxy.router.openshift.io/balance" in (decision.message or "")


def test_deleting_routes_are_skipped_and_decisions_are_deterministic() -> None:
    going = f.route("going", "a.example.com", created="2026-01-01T00:00:00Z")
    going.metadata.deletion_timestamp = "2026-02-01T00:00:00Z"
    staying = f.route("staying", "a.example.com", created="2026-01-02T00:00:00Z")
    first = admit([going, staying], [], CONFIG)
    assert [r.metadata.name for r in first.admitted] == ["staying"]
    assert admit([staying, going], [], CONFIG) == first
