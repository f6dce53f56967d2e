"""spec.httpHeaders against real HAProxy: what a pod sees and what a client gets.

Pods on loopback echo the request headers they saw (``X-Seen-Headers``); the
client reads the response headers. Request and response headers are set and
deleted on http and edge routes, and the router-wide actions
(``ROUTER_HTTP_REQUEST_HEADERS`` / ``ROUTER_HTTP_RESPONSE_HEADERS``) run before
the route's on requests and after them on responses, as OpenShift orders them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.backends import backends
from tests.support.router import (
    Reply,
    RouterEnv,
    endpoints,
    namespace,
    route,
    service,
)

pytestmark = pytest.mark.integration

NO_COOKIES = {"haproxy.router.openshift.io/disable_cookies": "true"}
ODD = "q\"x\\y $HOME #c 'a' é"  # config syntax and a non-ASCII letter, as a literal value


def set_(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "action": {"type": "Set", "set": {"value": value}}}


def delete(name: str) -> dict[str, Any]:
    return {"name": name, "action": {"type": "Delete"}}


def seen(reply: Reply) -> dict[str, str]:
    """The request headers the pod saw, lowercased names (values as HTTP carried them)."""
    return {k.lower(): v for k, v in json.loads(reply.headers["x-seen-headers"]).items()}


def latin1(text: str) -> str:
    """``text`` as Python's HTTP server decodes its UTF-8 bytes (ISO-8859-1)."""
    return text.encode().decode("latin-1")


async def _ready(env: RouterEnv, host: str, tls: bool) -> Reply:
    async def probe() -> Reply | None:
        reply = await (env.get_tls(host) if tls else env.get(host))
        return reply if reply.status == 200 else None

    result: Reply = await env.eventually(probe)
    return result


ACTIONS = {
    "request": [
        set_("X-Static", "static"),
        set_("X-Host-Lower", "%[req.hdr(Host),lower]"),
        set_("X-Odd", ODD),
        set_("X-Percent", "100%%"),
        delete("X-Remove-Me"),
    ],
    "response": [
        set_("X-Frame-Options", "DENY"),
        set_("X-Pod-Lower", "%[res.hdr(X-Backend),lower]"),
        delete("X-Seen-Path"),
    ],
}


@pytest.mark.parametrize("termination", [None, "edge"])
async def test_route_sets_and_deletes_request_and_response_headers(
    router_env: RouterEnv, termination: str | None
) -> None:
    env = router_env
    host = "Headers.Example.com"
    extra: dict[str, Any] = {"tls": {"termination": termination}} if termination else {}
    with backends("WebPod") as pods:
        await env.apply(namespace("hdr"), service("hdr", "web"), endpoints("hdr", "web", pods))
        await env.apply(
            route(
                "hdr",
                "web",
                host.lower(),
                "web",
                annotations=NO_COOKIES,
                httpHeaders={"actions": ACTIONS},
                **extra,
            )
        )
        tls = termination is not None
        await _ready(env, host.lower(), tls)
        ask = env.get_tls if tls else env.get
        reply = await ask(host, headers={"X-Remove-Me": "1", "X-Static": "from-client"})
        assert reply.status == 200 and reply.backend == "WebPod"
        pod_saw = seen(reply)
        assert pod_saw["x-static"] == "static"  # replaced, not added
        assert pod_saw["x-host-lower"] == "headers.example.com"
        assert pod_saw["x-odd"] == latin1(ODD)
        assert pod_saw["x-percent"] == "100%"
        assert "x-remove-me" not in pod_saw
        # Responses: set, set from the pod's own header, deleted.
        assert reply.headers["x-frame-options"] == "DENY"
        assert reply.headers["x-pod-lower"] == "webpod"
        assert "x-seen-path" not in reply.headers
        # A route without actions on the same router is untouched.
        await env.apply(service("hdr", "plain"), endpoints("hdr", "plain", pods))
        await env.apply(
            route("hdr", "plain", "plain.example.com", "plain", annotations=NO_COOKIES, **extra)
        )
        await _ready(env, "plain.example.com", tls)
        plain = await ask("plain.example.com", headers={"X-Remove-Me": "1"})
        assert seen(plain)["x-remove-me"] == "1" and "x-static" not in seen(plain)
        assert "x-frame-options" not in plain.headers and "x-seen-path" in plain.headers


async def test_router_wide_actions_run_before_the_routes_on_requests_and_after_on_responses(
    tmp_path: Path,
) -> None:
    env = RouterEnv(
        tmp_path,
        {
            "ROUTER_HTTP_REQUEST_HEADERS": "X-Order:router:Set,X-Router:r%20wide:Set,"
            "X-Client-Secret:Delete",
            "ROUTER_HTTP_RESPONSE_HEADERS": "X-Order:router:Set,X-Pod-Said:Delete",
        },
    )
    try:
        await env.start()
        with backends("pod") as pods:
            await env.apply(namespace("ord"), service("ord", "web"), endpoints("ord", "web", pods))
            actions = {
                "request": [
                    set_("X-Order", "route"),
                    # The router-wide header is already there when the route's action runs.
                    set_("X-Copied", "%[req.hdr(X-Router)]"),
                ],
                "response": [
                    set_("X-Order", "route"),
                    set_("X-Pod-Said", "%[res.hdr(X-Backend)]"),
                    set_("X-Route-Copy", "%[res.hdr(X-Pod-Said)]"),
                ],
            }
            for name, tls in (("web", None), ("secure", {"termination": "edge"})):
                spec: dict[str, Any] = {"httpHeaders": {"actions": actions}}
                if tls:
                    spec["tls"] = tls
                host = f"{name}.ord.example.com"
                await env.apply(route("ord", name, host, "web", annotations=NO_COOKIES, **spec))
                reply = await _ready(env, host, tls is not None)
                pod_saw = seen(reply)
                assert pod_saw["x-order"] == "route"  # the route's request action ran last
                assert pod_saw["x-router"] == "r wide"
                assert pod_saw["x-copied"] == "r wide"
                assert reply.headers["x-order"] == "router"  # router-wide response action last
                assert "x-pod-said" not in reply.headers  # deleted by the router after the route
                assert reply.headers["x-route-copy"] == "pod"
                ask = env.get_tls if tls else env.get
                secret = await ask(host, headers={"X-Client-Secret": "s"})
                assert "x-client-secret" not in seen(secret)
            # A route without actions gets the router-wide ones alone.
            await env.apply(route("ord", "plain", "plain.ord.example.com", "web"))
            plain = await _ready(env, "plain.ord.example.com", False)
            assert seen(plain)["x-order"] == "router"
            assert plain.headers["x-order"] == "router"
    finally:
        await env.stop()


async def test_changed_actions_are_served_and_removed_ones_go(router_env: RouterEnv) -> None:
    env = router_env
    host = "change.hdr.example.com"
    with backends("pod") as pods:
        await env.apply(namespace("chg"), service("chg", "web"), endpoints("chg", "web", pods))

        async def apply(actions: dict[str, Any] | None) -> None:
            spec: dict[str, Any] = {"httpHeaders": {"actions": actions}} if actions else {}
            await env.apply(route("chg", "web", host, "web", annotations=NO_COOKIES, **spec))

        async def pod_sees(value: str | None) -> bool:
            reply = await env.get(host)
            return reply.status == 200 and seen(reply).get("x-version") == value

        await apply({"request": [set_("X-Version", "one")]})
        assert await env.eventually(lambda: pod_sees("one"))
        await apply({"request": [set_("X-Version", "two")], "response": [delete("X-Backend")]})
        assert await env.eventually(lambda: pod_sees("two"))
        assert "x-backend" not in (await env.get(host)).headers
        await apply(None)

        async def gone() -> bool:
            reply = await env.get(host)
            return reply.status == 200 and "x-version" not in seen(reply) and reply.backend == "pod"

        assert await env.eventually(gone)
