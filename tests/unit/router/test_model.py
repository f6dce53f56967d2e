"""The L7 model: Kuryr's sequences, target ports, weights and annotations."""

from __future__ import annotations

import random

from tests.support import routes as f

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.model import (
    EDGE,
    HTTP,
    INSECURE_ALLOW,
    INSECURE_NONE,
    INSECURE_REDIRECT,
    PASSTHROUGH,
    REENCRYPT,
    L7Model,
    build_model,
    scale_weights,
)

CONFIG = RouterConfig(allow_wildcard_routes=True)


def model(routes: list, endpoints: list | None = None, services: list | None = None) -> L7Model:
    return build_model(admit(routes, [], CONFIG), endpoints or [], services or [])


# ------------------------------------------------------------------ Kuryr's sequences


def test_route_before_service_gives_empty_pool_that_fills_later() -> None:
    route = f.route("test", "www.example.com", namespace="mynamespace", service="s1")
    before = model([route])
    assert before.pool_names == ("mynamespace_s1",)
    pool = before.pool("mynamespace_s1")
    assert pool is not None and pool.members == ()
    policy = before.policy("mynamespace", "test")
    assert policy is not None
    assert policy.rule.host == "www.example.com"
    assert policy.pools == ("mynamespace_s1",)
    assert policy.servers == ()  # the route answers 503 until the endpoints exist

    eps = f.endpoints("s1", ["10.1.0.5", "10.1.0.4"], namespace="mynamespace")
    after = model([route], [eps])
    pool = after.pool("mynamespace_s1")
    assert pool is not None
    assert [(m.ip, m.port) for m in pool.members] == [("10.1.0.4", 8080), ("10.1.0.5", 8080)]
    servers = after.policy("mynamespace", "test").servers  # type: ignore[union-attr]
    assert [s.address for s in servers] == ["10.1.0.4:8080", "10.1.0.5:8080"]
    assert {s.pod for s in servers} == {"s1-0", "s1-1"}


def test_service_before_route_then_route_deleted_removes_pool() -> None:
    eps = f.endpoints("s1", ["10.1.0.4"], namespace="mynamespace")
    assert model([], [eps]).pools == ()  # no route points at s1: no pool
    route = f.route("test", "www.example.com", namespace="mynamespace", service="s1")
    with_route = model([route], [eps])
    assert with_route.pool_names == ("mynamespace_s1",)
    assert len(with_route.policies[0].servers) == 1
    assert model([], [eps]).pools == ()  # route deleted: policy and pool are gone


def test_pool_lives_while_any_route_points_at_it() -> None:
    a = f.route("a", "a.example.com", service="s1")
    b = f.route("b", "b.example.com", service="s1")
    c = f.route("c", "c.example.com", service="s2", alternates=[("s1", 10)])
    assert model([a, b, c]).pool_names == ("ns_s1", "ns_s2")
    assert model([b, c]).pool_names == ("ns_s1", "ns_s2")
    assert model([c]).pool_names == ("ns_s1", "ns_s2")
    assert model([a]).pool_names == ("ns_s1",)


def test_only_admitted_routes_become_policies() -> None:
    old = f.route("old", "same.example.com", namespace="one", created="2026-01-01T00:00:00Z")
    new = f.route("new", "same.example.com", namespace="two", created="2026-01-02T00:00:00Z")
    m = model([new, old])
    assert [p.key for p in m.policies] == [("one", "old")]
    assert m.pool_names == ("one_svc",)


# ------------------------------------------------------------------ members and ports


def test_named_target_port_picks_that_port() -> None:
    eps = f.endpoints("svc", ["10.0.0.1"], [("http", 8080), ("https", 8443)])
    m = model([f.route("r", target_port="https")], [eps])
    assert [s.address for s in m.policies[0].servers] == ["10.0.0.1:8443"]


def test_numeric_target_port_and_digit_string() -> None:
    eps = f.endpoints("svc", ["10.0.0.1"], [("http", 8080), ("https", 8443)])
    assert [s.port for s in model([f.route("r", target_port=8443)], [eps]).policies[0].servers] == [
        8443
    ]
    assert [
        s.port for s in model([f.route("r", target_port="8080")], [eps]).policies[0].servers
    ] == [8080]


def test_target_ports_that_are_digits_only_to_str_isdigit_match_no_port() -> None:
    # "²" passes str.isdigit and then fails int(): one such route must not stop the model.
    eps = f.endpoints("svc", ["10.0.0.1"], [("http", 8080)])
    for odd in ("\u00b2", "\u0668\u0660\u0668\u0660"):  # superscript 2; Arabic-Indic 8080
        m = model([f.route("r", target_port=odd), f.route("ok", target_port="8080")], [eps])
        servers = {p.name: [s.port for s in p.servers] for p in m.policies}
        assert servers == {"r": [], "ok": [8080]}, odd


def test_numeric_target_port_may_name_the_service_port() -> None:
    eps = f.endpoints("svc", ["10.0.0.1"], [("web", 8080)])
    svc = f.service("svc", [("web", 80, 8080)])
    m = model([f.route("r", target_port=80)], [eps], [svc])
    assert [s.address for s in m.policies[0].servers] == ["10.0.0.1:8080"]


def test_no_target_port_uses_the_first_port() -> None:
    eps = f.endpoints("svc", ["10.0.0.2", "10.0.0.1"], [("b", 9000), ("a", 8000)])
    m = model([f.route("r")], [eps])
    assert [s.address for s in m.policies[0].servers] == ["10.0.0.1:9000", "10.0.0.2:9000"]


def test_unknown_target_port_gives_no_servers_and_a_warning() -> None:
    eps = f.endpoints("svc", ["10.0.0.1"], [("http", 8080)])
    policy = model([f.route("r", target_port="grpc")], [eps]).policies[0]
    assert policy.servers == ()
    assert any("targetPort 'grpc'" in w for w in policy.warnings)


def test_not_ready_and_invalid_addresses_are_not_members() -> None:
    eps = f.endpoints("svc", ["10.0.0.1", "not-an-ip"], not_ready=["10.0.0.9"])
    m = model([f.route("r")], [eps])
    assert [s.ip for s in m.policies[0].servers] == ["10.0.0.1"]


def test_ipv6_member_address_is_bracketed() -> None:
    eps = f.endpoints("svc", ["fd00::1"])
    assert model([f.route("r")], [eps]).policies[0].servers[0].address == "[fd00::1]:8080"


# ------------------------------------------------------------------ weights


def test_scale_weights_like_openshift() -> None:
    # 100 over 3 pods (33.3 each) against 50 on one pod: the largest becomes 256.
    assert scale_weights({"a": (100, 3), "b": (50, 1)}) == {"a": 170, "b": 256}
    assert scale_weights({"a": (1, 1), "b": (3, 1)}) == {"a": 85, "b": 256}
    assert scale_weights({"a": (1, 100), "b": (256, 1)}) == {"a": 1, "b": 256}  # never 0
    assert scale_weights({"a": (0, 2), "b": (10, 0)}) == {"a": 0, "b": 0}


def test_weighted_backends_split_in_proportion() -> None:
    route = f.route("r", service="a", weight=1, alternates=[("b", 3)])
    eps = [f.endpoints("a", ["10.0.0.1"]), f.endpoints("b", ["10.0.0.2"])]
    policy = model([route], eps).policies[0]
    weights = {s.pool: s.weight for s in policy.servers}
    assert weights == {"ns_a": 85, "ns_b": 256}
    assert [(t.pool, t.weight, t.members) for t in policy.targets] == [
        ("ns_a", 1, 1),
        ("ns_b", 3, 1),
    ]


def test_weight_zero_takes_no_traffic() -> None:
    route = f.route("r", service="a", weight=0, alternates=[("b", 5)])
    eps = [f.endpoints("a", ["10.0.0.1"]), f.endpoints("b", ["10.0.0.2"])]
    policy = model([route], eps).policies[0]
    assert [(s.pool, s.weight) for s in policy.servers] == [("ns_b", 1)]  # the only active one
    assert model([route], eps).pool_names == ("ns_a", "ns_b")  # the pool still exists


def test_all_weights_zero_means_no_servers() -> None:
    route = f.route("r", service="a", weight=0, alternates=[("b", 0)])
    eps = [f.endpoints("a", ["10.0.0.1"]), f.endpoints("b", ["10.0.0.2"])]
    policy = model([route], eps).policies[0]
    assert policy.all_weights_zero
    assert policy.servers == ()


def test_default_weight_is_100_and_spread_over_pods() -> None:
    eps = f.endpoints("svc", ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    policy = model([f.route("r")], [eps]).policies[0]
    assert [s.weight for s in policy.servers] == [1, 1, 1]  # one active service: 1, as OpenShift
    assert policy.targets[0].weight == 100


# ------------------------------------------------------------------ rules, TLS, annotations


def test_termination_and_insecure_policy() -> None:
    routes = [
        f.route("plain"),
        f.route("edge", tls={"termination": "edge"}),
        f.route(
            "edge-allow", tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Allow"}
        ),
        f.route(
            "pt", tls={"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"}
        ),
        f.route("re", tls={"termination": "reencrypt", "destinationCACertificate": None}),
    ]
    got = {p.name: (p.termination, p.insecure_policy) for p in model(routes).policies}
    assert got == {
        "plain": (HTTP, INSECURE_ALLOW),
        "edge": (EDGE, INSECURE_NONE),
        "edge-allow": (EDGE, INSECURE_ALLOW),
        "pt": (PASSTHROUGH, INSECURE_REDIRECT),
        "re": (REENCRYPT, INSECURE_NONE),
    }


def test_wildcard_rule_serves_the_parent_domain() -> None:
    policy = model([f.route("w", "any.apps.example.com", wildcard=True)]).policies[0]
    assert policy.rule.wildcard and policy.rule.domain == "apps.example.com"


def test_rule_takes_admitted_host_and_path_as_given() -> None:
    policy = model([f.route("r", "www.example.com", path="/Foo")]).policies[0]
    assert (policy.rule.host, policy.rule.path) == ("www.example.com", "/Foo")


def test_annotations_are_parsed_and_invalid_ones_ignored_with_warning() -> None:
    route = f.route(
        "r",
        annotations={
            "haproxy.router.openshift.io/balance": "roundrobin",
            "haproxy.router.openshift.io/timeout": "forever",
            "router.openshift.io/cookie_name": "my_cookie",
        },
    )
    policy = model([route]).policies[0]
    assert policy.options.balance == "roundrobin"
    assert policy.options.timeout_ms is None
    assert policy.options.cookie_name == "my_cookie"
    assert any("haproxy.router.openshift.io/timeout" in w for w in policy.warnings)


def test_model_does_not_depend_on_input_order() -> None:
    routes = [f.route(f"r{i}", f"h{i}.example.com", service=f"s{i % 3}") for i in range(12)]
    eps = [f.endpoints(f"s{i}", [f"10.0.{i}.{j}" for j in range(1, 4)]) for i in range(3)]
    first = model(routes, eps)
    for seed in range(3):
        rng = random.Random(seed)
        shuffled_routes, shuffled_eps = routes[:], eps[:]
        rng.shuffle(shuffled_routes)
        rng.shuffle(shuffled_eps)
        assert model(shuffled_routes, shuffled_eps) == first


def _versioned(obj, version: str):  # type: ignore[no-untyped-def]
    meta = obj.metadata.model_copy(
        update={"resource_version": version, "uid": obj.metadata.uid or f"uid-{obj.metadata.name}"}
    )
    return obj.model_copy(update={"metadata": meta})


def test_memoised_model_of_stored_objects_equals_a_fresh_one() -> None:
    # Objects from the store carry resourceVersions, which turn the memos on.
    routes = [
        f.route(f"r{i}", f"h{i}.example.com", service=f"s{i % 2}", target_port=80) for i in range(6)
    ]
    eps = [f.endpoints(f"s{i}", [f"10.0.{i}.1", f"10.0.{i}.2"], [("web", 8080)]) for i in range(2)]
    svcs = [f.service(f"s{i}", [("web", 80, 8080)]) for i in range(2)]
    fresh = model(routes, eps, svcs)
    stored_routes = [_versioned(r, "1") for r in routes]
    stored_eps = [_versioned(e, "1") for e in eps]
    stored_svcs = [_versioned(s, "1") for s in svcs]
    first = model(stored_routes, stored_eps, stored_svcs)
    assert first == fresh
    assert model(stored_routes, stored_eps, stored_svcs) == fresh  # from the memo

    # A new Endpoints version changes the servers of exactly the routes using it.
    moved = _versioned(f.endpoints("s0", ["10.0.9.9"], [("web", 8080)]), "2")
    changed = model(stored_routes, [moved, stored_eps[1]], stored_svcs)
    for before, after in zip(first.policies, changed.policies, strict=True):
        if after.pools == ("ns_s0",):
            assert [s.address for s in after.servers] == ["10.0.9.9:8080"]
        else:
            assert after == before
