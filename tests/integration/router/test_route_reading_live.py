"""The router's reading of a Route, observed through a real HAProxy: annotations
that OpenShift reads leniently still restrict the route as asked."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from tests.integration.router.test_render_live import _eps, running_haproxy
from tests.support import routes as f
from tests.support.backends import backends
from tests.support.ports import free_port
from tests.support.router import RouterEnv, endpoints, namespace, request, service, sha256_of_pem
from tests.support.router import route as support_route
from tests.support.tls import TestCA

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.files import write_file_set
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model

pytestmark = pytest.mark.integration

ALLOW = "haproxy.router.openshift.io/ip_allowlist"


def _serve(tmp_path: Path, config: RouterConfig, routes: list, eps: list) -> Path:  # type: ignore[type-arg]
    default = TestCA().issue("default.example")
    (tmp_path / "default.pem").write_text(default.cert_pem + default.key_pem)
    (tmp_path / "run").mkdir()
    model = build_model(admit(routes, [], config), eps)
    paths = RenderPaths(str(tmp_path / "run"), str(tmp_path / "default.pem"))
    write_file_set(tmp_path / "conf", render(model, config, paths).files)
    return tmp_path / "conf"


def test_allowlists_keep_their_valid_entries_and_never_fail_open(tmp_path: Path) -> None:
    http_port = free_port()
    config = RouterConfig(
        http_port=http_port,
        https_port=free_port(),
        stats_port=0,
        threads=1,
        max_connections=200,
        bind_address="127.0.0.1",
    )
    lists = {
        "mixed-in": "127.0.0.0/8 not-an-ip",  # the loopback client is in the kept entry
        "mixed-out": "10.0.0.0/8 not-an-ip",
        "all-bad": "nope 1.2.3",  # OpenShift: no allowlist, every client served
        "spaced-in": " 127.0.0.1 ",  # OpenShift: no allowlist
        "spaced-out": " 10.0.0.1 ",
        "tabbed": "10.0.0.1\t127.0.0.1",
    }
    with backends("pod", port=free_port()) as pods:
        routes = [
            f.route(name, f"{name}.example.com", service="web", annotations={ALLOW: value})
            for name, value in lists.items()
        ]
        routes.append(f.route("open", "open.example.com", service="web"))
        conf = _serve(tmp_path, config, routes, [_eps("web", pods)])
        with running_haproxy(conf, [http_port]):
            got = {
                name: request(http_port, f"{name}.example.com").status for name in [*lists, "open"]
            }
    assert got == {
        "mixed-in": 200,
        "mixed-out": 403,
        "all-bad": 403,
        "spaced-in": 200,
        "spaced-out": 403,
        "tabbed": 200,
        "open": 200,
    }


def test_two_weighted_services_switch_a_passthrough_route_to_roundrobin(tmp_path: Path) -> None:
    """OpenShift's balance switch: with two services of non-zero weight (one of them
    without pods yet) a passthrough route is balanced roundrobin, not by source, so
    one client's connections reach both pods; a one-service route stays on source."""
    https_port = free_port()
    config = RouterConfig(
        http_port=free_port(),
        https_port=https_port,
        stats_port=0,
        threads=1,
        max_connections=200,
        bind_address="127.0.0.1",
    )
    pod_cert = TestCA().issue("127.0.0.1")
    with backends("p1", "p2", tls=pod_cert, port=free_port()) as pods:
        routes = [
            f.route(
                "two",
                "two.example.com",
                service="web",
                alternates=[("later", 50)],
                tls={"termination": "passthrough"},
            ),
            f.route("one", "one.example.com", service="web", tls={"termination": "passthrough"}),
        ]
        conf = _serve(tmp_path, config, routes, [_eps("web", pods)])
        with running_haproxy(conf, [config.http_port]):
            two = [request(https_port, "two.example.com", tls=True).backend for _ in range(8)]
            one = {request(https_port, "one.example.com", tls=True).backend for _ in range(8)}
    assert sorted(set(two)) == ["p1", "p2"]
    assert all(a != b for a, b in itertools.pairwise(two)), two  # strictly alternating
    assert len(one) == 1  # source: one client, one pod


def _relabel(pem: str, label: str) -> str:
    body = "\n".join(line for line in pem.splitlines() if not line.startswith("-----"))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n"


def test_keys_are_read_as_openshift_reads_them(tmp_path: Path) -> None:
    """A key under another label (here PKCS#8 under "ECDSA PRIVATE KEY") and a second,
    unrelated key after it: OpenShift's router serves the route with the first key,
    and so does shiftnet, through a real HAProxy."""
    https_port = free_port()
    config = RouterConfig(
        http_port=free_port(),
        https_port=https_port,
        stats_port=0,
        threads=1,
        max_connections=200,
        bind_address="127.0.0.1",
    )
    ca = TestCA()
    mine, other = ca.issue("keys.example.com"), ca.issue("other.example.com")
    key = _relabel(mine.key_pem, "ECDSA PRIVATE KEY") + other.key_pem
    with backends("pod", port=free_port()) as pods:
        routes = [
            f.route(
                "keys",
                "keys.example.com",
                service="web",
                tls={"termination": "edge", "certificate": mine.cert_pem, "key": key},
            )
        ]
        decision = admit(routes, [], config).decision("ns", "keys")
        assert decision is not None and decision.admitted, decision
        conf = _serve(tmp_path, config, routes, [_eps("web", pods)])
        with running_haproxy(conf, [config.http_port]):
            answer = request(https_port, "keys.example.com", tls=True)
    assert answer.status == 200 and answer.backend == "pod"
    assert answer.cert_sha256 == sha256_of_pem(mine.cert_pem)


async def test_a_running_router_serves_what_it_can_and_says_what_it_dropped(
    router_env: RouterEnv,
) -> None:
    """The whole router: a Route whose annotations OpenShift reads leniently is served as
    asked, and its status says which entries were dropped and which value was clipped;
    an allowlist with no valid entry refuses every client."""
    env = router_env
    notes = {
        ALLOW: "127.0.0.0/8 not-an-ip",
        "haproxy.router.openshift.io/timeout": "30d",
    }
    with backends("pod") as pods:
        await env.apply(namespace("demo"), service("demo", "web"), endpoints("demo", "web", pods))
        await env.apply(
            support_route("demo", "lenient", "lenient.example.com", "web", annotations=notes),
            support_route(
                "demo", "closed", "closed.example.com", "web", annotations={ALLOW: "nope"}
            ),
        )
        ing = await env.eventually(lambda: env.ingress("demo", "lenient"))
        assert ing.conditions[0].status == "True"
        message = ing.conditions[0].message or ""
        assert "'not-an-ip'" in message and "1 valid entry kept" in message
        assert "clipped to HAProxy's largest time, 2147483647ms" in message

        async def lenient_served() -> bool:
            return (await env.get("lenient.example.com")).status == 200

        await env.eventually(lenient_served)
        assert (await env.get("closed.example.com")).status == 403
        closed = await env.eventually(lambda: env.ingress("demo", "closed"))
        assert "every client is refused" in (closed.conditions[0].message or "")
