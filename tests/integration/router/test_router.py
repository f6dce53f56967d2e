"""The whole router against real HAProxy, real pods on loopback and a real HTTP/TLS client.

Each test writes real Namespaces, Services, Endpoints and Routes through the
Client into a sqlite store, and observes the result as traffic (which pod
answered, which certificate the client saw) and as route status.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import threading

import pytest
from tests.support.backends import backends
from tests.support.router import (
    RouterEnv,
    endpoints,
    namespace,
    request,
    route,
    service,
    sha256_of_pem,
)
from tests.support.tls import TestCA

from shiftnet.api import Endpoints, Route
from shiftnet.router import metrics

pytestmark = pytest.mark.integration

NO_COOKIES = {"haproxy.router.openshift.io/disable_cookies": "true"}


async def serve(env: RouterEnv, ns: str, name: str, pods: list, **route_spec) -> None:  # type: ignore[no-untyped-def]
    await env.apply(namespace(ns), service(ns, name), endpoints(ns, name, pods))
    await env.apply(
        route(ns, name, route_spec.pop("host", f"{name}.{ns}.example.com"), name, **route_spec)
    )


async def backend_of(env: RouterEnv, host: str, **kw) -> str:  # type: ignore[no-untyped-def]
    return (await env.get(host, **kw)).backend


async def test_http_route_reaches_pods_and_is_admitted(router_env: RouterEnv) -> None:
    env = router_env
    with backends("web-1", "web-2") as pods:
        await serve(env, "demo", "web", pods, host="web.example.com")
        await env.eventually(lambda: _when(env.get("web.example.com"), lambda r: r.status == 200))
        seen = set()
        for _ in range(20):
            r = await env.get("web.example.com")
            assert r.status == 200
            seen.add(r.backend)
        assert seen == {"web-1", "web-2"}
        # Host is case-insensitive and the port is ignored.
        r = await env.get(f"WEB.example.COM:{env.http_port}")
        assert r.status == 200 and r.backend in seen
        ing = await env.eventually(lambda: env.ingress("demo", "web"))
        assert ing.conditions[0].type == "Admitted" and ing.conditions[0].status == "True"
        assert ing.conditions[0].last_transition_time
        # Unknown host: the 503 page, never a pod.
        r = await env.get("nothing.example.com")
        assert r.status == 503 and not r.backend


async def test_route_before_its_service_answers_503_and_deleting_the_last_route_drops_the_pool(
    router_env: RouterEnv,
) -> None:
    env = router_env
    await env.apply(namespace("mynamespace"))
    await env.apply(route("mynamespace", "test", "www.example.com", "s1"))
    # The pool exists with no members: 503.
    r = await env.eventually(lambda: _when(env.get("www.example.com"), lambda r: r.status == 503))
    assert r.status == 503
    await env.eventually(lambda: _true(env.router.model.pool("mynamespace_s1") is not None))
    assert env.router.model.pool("mynamespace_s1").members == ()
    with backends("s1-pod") as pods:
        await env.apply(service("mynamespace", "s1"), endpoints("mynamespace", "s1", pods))
        r = await env.eventually(
            lambda: _when(env.get("www.example.com"), lambda r: r.status == 200)
        )
        assert r.backend == "s1-pod"
        await env.delete(Route, "mynamespace", "test")
        await env.eventually(lambda: _true(env.router.model.pool("mynamespace_s1") is None))
        r = await env.eventually(
            lambda: _when(env.get("www.example.com"), lambda r: r.status == 503)
        )
        cfg = (env.work_dir / "conf" / "haproxy.cfg").read_text()
        assert "mynamespace_s1" not in cfg and "s1-pod" not in cfg


async def _when(coro, pred):  # type: ignore[no-untyped-def]
    r = await coro
    return r if pred(r) else None


async def _true(value: bool) -> bool:
    return value


async def test_tls_edge_passthrough_reencrypt_reach_the_right_pod(router_env: RouterEnv) -> None:
    env = router_env
    ca = TestCA()
    edge = ca.issue("edge.example.com")
    reenc = ca.issue("reenc.example.com")
    pod_ca = TestCA("pod CA")
    pass_pod_cert = pod_ca.issue("pass.example.com")
    reenc_pod_cert = pod_ca.issue("reenc-pod.demo.svc")
    default_fp = sha256_of_pem((env.work_dir / "default-certificate.pem").read_bytes())
    with (
        backends("edge-pod") as edge_pods,
        backends("pass-pod", tls=pass_pod_cert) as pass_pods,
        backends("reenc-pod", tls=reenc_pod_cert) as reenc_pods,
    ):
        await serve(
            env,
            "demo",
            "edge",
            edge_pods,
            host="edge.example.com",
            tls={"termination": "edge", "certificate": edge.cert_pem, "key": edge.key_pem},
        )
        await serve(
            env,
            "demo",
            "pass",
            pass_pods,
            host="pass.example.com",
            tls={"termination": "passthrough"},
        )
        await serve(
            env,
            "demo",
            "reenc",
            reenc_pods,
            host="reenc.example.com",
            tls={
                "termination": "reencrypt",
                "certificate": reenc.cert_pem,
                "key": reenc.key_pem,
                "destinationCACertificate": pod_ca.cert_pem,
            },
        )
        await serve(
            env,
            "demo",
            "edge2",
            edge_pods,
            host="edge-default.example.com",
            tls={"termination": "edge"},
        )

        r = await env.eventually(
            lambda: _when(env.get_tls("edge.example.com"), lambda r: r.status == 200)
        )
        assert r.backend == "edge-pod" and r.cert_sha256 == edge.fingerprint
        r = await env.eventually(
            lambda: _when(env.get_tls("pass.example.com"), lambda r: r.status == 200)
        )
        assert r.backend == "pass-pod" and r.cert_sha256 == pass_pod_cert.fingerprint
        r = await env.eventually(
            lambda: _when(env.get_tls("reenc.example.com"), lambda r: r.status == 200)
        )
        assert r.backend == "reenc-pod" and r.cert_sha256 == reenc.fingerprint
        # Edge without its own certificate: the default one.
        r = await env.eventually(
            lambda: _when(env.get_tls("edge-default.example.com"), lambda r: r.status == 200)
        )
        assert r.backend == "edge-pod" and r.cert_sha256 == default_fp
        # No SNI: the default certificate.
        r = await env.get_tls("edge.example.com", sni=None)
        assert r.cert_sha256 == default_fp


async def test_insecure_edge_termination_policies(router_env: RouterEnv) -> None:
    env = router_env
    with backends("pod") as pods:
        for policy in ("Redirect", "None", "Allow"):
            await serve(
                env,
                "demo",
                policy.lower(),
                pods,
                host=f"{policy.lower()}.example.com",
                tls={"termination": "edge", "insecureEdgeTerminationPolicy": policy},
            )
        for host in ("redirect", "none", "allow"):
            await env.eventually(
                lambda h=host: _when(env.get_tls(f"{h}.example.com"), lambda r: r.status == 200)
            )
        r = await env.get("redirect.example.com", "/x?y=1")
        assert r.status == 302
        assert r.headers["location"] == f"https://redirect.example.com:{env.https_port}/x?y=1"
        r = await env.get("none.example.com")
        assert r.status != 200 and r.backend == ""
        r = await env.get("allow.example.com")
        assert r.status == 200 and r.backend == "pod"


async def test_roundrobin_splits_evenly_over_three_pods(router_env: RouterEnv) -> None:
    env = router_env
    with backends("rr-1", "rr-2", "rr-3") as pods:
        ann = {"haproxy.router.openshift.io/balance": "roundrobin", **NO_COOKIES}
        await serve(env, "demo", "rr", pods, host="rr.example.com", annotations=ann)
        await env.eventually(lambda: _when(env.get("rr.example.com"), lambda r: r.status == 200))
        counts = collections.Counter(
            await asyncio.to_thread(
                lambda: [request(env.http_port, "rr.example.com").backend for _ in range(1000)]
            )
        )
        assert set(counts) == {"rr-1", "rr-2", "rr-3"}
        for n in counts.values():
            assert abs(n - 1000 / 3) <= 1000 / 3 * 0.10, counts


async def test_weights_one_to_three(router_env: RouterEnv) -> None:
    env = router_env
    with backends("a-1") as a_pods, backends("b-1") as b_pods:
        await env.apply(
            namespace("demo"),
            service("demo", "a"),
            endpoints("demo", "a", a_pods),
            service("demo", "b"),
            endpoints("demo", "b", b_pods),
        )
        ann = {"haproxy.router.openshift.io/balance": "roundrobin", **NO_COOKIES}
        await env.apply(
            route(
                "demo",
                "ab",
                "ab.example.com",
                "a",
                annotations=ann,
                to={"kind": "Service", "name": "a", "weight": 1},
                alternateBackends=[{"kind": "Service", "name": "b", "weight": 3}],
            )
        )
        await env.eventually(lambda: _when(env.get("ab.example.com"), lambda r: r.status == 200))
        counts = collections.Counter(
            await asyncio.to_thread(
                lambda: [request(env.http_port, "ab.example.com").backend for _ in range(1000)]
            )
        )
        assert abs(counts["a-1"] / 1000 - 0.25) <= 0.05, counts
        assert abs(counts["b-1"] / 1000 - 0.75) <= 0.05, counts


async def test_zero_failed_requests_through_50_reloads(router_env: RouterEnv) -> None:
    env = router_env
    with backends("steady") as pods:
        await serve(env, "demo", "steady", pods, host="steady.example.com")
        await env.eventually(
            lambda: _when(env.get("steady.example.com"), lambda r: r.status == 200)
        )
        stop = threading.Event()
        ok: list[int] = []
        failed: list[str] = []

        def client() -> None:
            while not stop.is_set():
                try:
                    r = request(env.http_port, "steady.example.com")
                    (ok if r.status == 200 else failed).append(r.status)  # type: ignore[arg-type]
                except OSError as err:
                    failed.append(repr(err))

        t = threading.Thread(target=client)
        t.start()
        await env.router.sync_now()
        reloads_before = env.router.driver.reloads
        try:
            # One new route per reload (a reload may cover two if they race): go on
            # until HAProxy has reloaded 50 times under the running client. Each
            # route's own server timeout gives it a backend of its own that no
            # spare fits (a route like another would share that one's backend).
            i = 0
            while env.router.driver.reloads - reloads_before < 50 and i < 80:
                timeout = {"haproxy.router.openshift.io/timeout": f"{i + 30}s"}
                await env.apply(
                    route("demo", f"r{i}", f"r{i}.example.com", "steady", annotations=timeout)
                )
                await env.eventually(
                    lambda i=i: _when(env.get(f"r{i}.example.com"), lambda r: r.status == 200)
                )
                await env.router.driver.flush()
                i += 1
        finally:
            stop.set()
            t.join()
        assert env.router.driver.reloads - reloads_before >= 50
        assert failed == [] and len(ok) > 50


async def test_host_claims_oldest_wins_and_loser_takes_over(router_env: RouterEnv) -> None:
    env = router_env
    with (
        backends("old-pod") as old_pods,
        backends("new-pod") as new_pods,
        backends("other-pod") as other_pods,
    ):
        await serve(env, "team-a", "old", old_pods, host="claimed.example.com")
        await env.eventually(lambda: env.ingress("team-a", "old"))
        await serve(env, "team-a", "new", new_pods, host="claimed.example.com")
        await serve(env, "team-b", "other", other_pods, host="claimed.example.com", path="/b")
        new = await env.eventually(lambda: env.ingress("team-a", "new"))
        other = await env.eventually(lambda: env.ingress("team-b", "other"))
        assert new.conditions[0].status == "False"
        assert new.conditions[0].reason == "HostAlreadyClaimed"
        assert "team-a/old" in (new.conditions[0].message or "")
        assert other.conditions[0].status == "False"
        assert other.conditions[0].reason == "HostAlreadyClaimed"
        assert "team-a" in (other.conditions[0].message or "")
        for _ in range(5):
            assert (await env.get("claimed.example.com")).backend == "old-pod"
            assert (await env.get("claimed.example.com", "/b")).backend == "old-pod"
        await env.delete(Route, "team-a", "old")
        r = await env.eventually(
            lambda: _when(env.get("claimed.example.com"), lambda r: r.backend == "new-pod")
        )
        assert r.status == 200
        new = await env.eventually(
            lambda: _when(
                env.ingress("team-a", "new"), lambda e: e and e.conditions[0].status == "True"
            )
        )
        assert new.conditions[0].reason is None
        other = await env.ingress("team-b", "other")
        assert other.conditions[0].status == "False"


async def test_endpoint_change_without_reload_and_health_check(router_env: RouterEnv) -> None:
    env = router_env
    with backends("ep-1", "ep-2", "ep-3") as (p1, p2, p3):
        ann = {
            "haproxy.router.openshift.io/balance": "roundrobin",
            **NO_COOKIES,
            "router.openshift.io/haproxy.health.check.interval": "200ms",
        }
        await serve(env, "demo", "ep", [p1, p2], host="ep.example.com", annotations=ann)
        await env.eventually(lambda: _when(env.get("ep.example.com"), lambda r: r.status == 200))
        await env.router.sync_now()
        reloads = env.router.driver.reloads
        master_reloads = (await env.router.driver.process.wait_status(5)).reloads
        # A third pod becomes ready: served with no reload.
        await env.apply(endpoints("demo", "ep", [p1, p2, p3]))
        await env.eventually(
            lambda: _when(env.get("ep.example.com"), lambda r: r.backend == "ep-3")
        )
        assert env.router.driver.reloads == reloads
        assert (await env.router.driver.process.wait_status(5)).reloads == master_reloads
        assert env.router.driver.runtime_applies >= 1
        # A pod dies without the endpoints changing: health checks take it out.
        p2.stop()
        await asyncio.sleep(1.0)
        names = [(await env.get("ep.example.com")) for _ in range(12)]
        assert all(r.status == 200 for r in names)
        assert {r.backend for r in names} == {"ep-1", "ep-3"}


async def test_haproxy_killed_is_restarted(router_env: RouterEnv) -> None:
    env = router_env
    with backends("k-1") as pods:
        await serve(env, "demo", "k", pods, host="k.example.com")
        await env.eventually(lambda: _when(env.get("k.example.com"), lambda r: r.status == 200))
        pid = env.router.driver.process.read_pid()
        os.kill(pid, signal.SIGKILL)
        await env.eventually(lambda: _true(env.router.driver.process.restarts >= 1))
        r = await env.eventually(lambda: _when(env.get("k.example.com"), lambda r: r.status == 200))
        assert r.backend == "k-1"
        assert env.router.driver.process.read_pid() != pid


async def test_restarted_router_adopts_haproxy_without_reload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = RouterEnv(tmp_path)
    try:
        with backends("a-1") as pods:
            await env.start()
            await serve(env, "demo", "a", pods, host="a.example.com")
            await env.eventually(lambda: _when(env.get("a.example.com"), lambda r: r.status == 200))
            await env.router.sync_now()
            pid = env.router.driver.process.read_pid()
            master_reloads = (await env.router.driver.process.wait_status(5)).reloads
            await env.router.stop(stop_haproxy=False)  # as if the router died
            assert (await env.get("a.example.com")).backend == "a-1"
            await env.start()  # a new Router on the same work dir and store
            assert env.router.driver.process.read_pid() == pid
            assert (await env.router.driver.process.wait_status(5)).reloads == master_reloads
            assert env.router.driver.reloads == 0
            assert (await env.get("a.example.com")).backend == "a-1"
            await env.router.stop()
            assert not env.router.driver.process.alive()
    finally:
        await env.stop()


async def test_two_replicas_do_not_fight_over_status(tmp_path) -> None:  # type: ignore[no-untyped-def]
    one = RouterEnv(tmp_path)
    two = RouterEnv(tmp_path)  # same store file, its own ports and work dir
    try:
        with backends("p") as pods:
            await one.start()
            await two.start()
            await serve(one, "demo", "r", pods, host="r.example.com")
            for env in (one, two):
                await env.eventually(
                    lambda e=env: _when(e.get("r.example.com"), lambda r: r.status == 200)
                )
            await one.eventually(lambda: one.ingress("demo", "r"))
            await asyncio.sleep(0.5)
            version = (await one.client.get(Route, "demo", "r")).metadata.resource_version
            await one.router.sync_now()
            await two.router.sync_now()
            await asyncio.sleep(0.5)
            stored = await one.client.get(Route, "demo", "r")
            assert stored.metadata.resource_version == version
            assert [e.router_name for e in stored.status.ingress] == ["router"]
    finally:
        await two.stop()
        await one.stop()


async def test_metrics_and_describe(router_env: RouterEnv) -> None:
    from shiftnet.router.describe import describe_route

    env = router_env
    with backends("m-1", "m-2") as pods:
        await serve(env, "demo", "m", pods, host="m.example.com")
        await env.eventually(lambda: _when(env.get("m.example.com"), lambda r: r.status == 200))
        for _ in range(4):
            await env.get("m.example.com")

        async def most_requests() -> float:
            # HAProxy may count the last request just after its answer: ask again.
            await env.router.update_backend_metrics()
            samples = [
                s.value
                for m in metrics.REGISTRY.collect()
                for s in m.samples
                if s.name == "haproxy_backend_http_requests_total"
            ]
            return max(samples) if max(samples, default=0) >= 5 else 0

        assert await env.eventually(most_requests, timeout=30) >= 5
        assert metrics.REGISTRY.get_sample_value("template_router_reload_seconds_count") >= 1
        stored = await env.client.get(Route, "demo", "m")
        lines = await describe_route(stored, env.state_dir)
        text = "\n".join(lines)
        assert "m-1" in text or pods[0].ip in text
        assert pods[1].ip in text and "UP" in text
        assert Endpoints  # the kinds used above are the API's own


def _backend_series(text: str) -> dict[str, float]:
    """``{'name{labels}': value}`` of the per-backend series in a scrape's text."""
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(
            ("haproxy_backend_http_requests_total{", "haproxy_backend_errors_total{")
        )
    }


async def test_stopped_router_leaves_no_backend_series(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A library user who starts and stops routers in one process scrapes only live ones."""
    from prometheus_client import generate_latest

    env = RouterEnv(tmp_path)
    try:
        with backends("gone-1") as pods:
            await env.start()
            await serve(env, "demo", "gone", pods, host="gone.example.com")
            await env.eventually(
                lambda: _when(env.get("gone.example.com"), lambda r: r.status == 200)
            )
            await env.router.update_backend_metrics()
            ours = _backend_series(generate_latest(metrics.REGISTRY).decode())
            assert any(v >= 1 for k, v in ours.items() if "requests" in k), ours  # our request
            await env.router.stop()
            after = generate_latest(metrics.REGISTRY).decode()
            left = ours.keys() & _backend_series(after).keys()
            assert not left, sorted(left)[:5]
            assert "template_router_reload_seconds_count" in after  # router-wide series stay
    finally:
        await env.stop()


async def test_route_host_and_path_change_without_reload(router_env: RouterEnv) -> None:
    env = router_env
    with backends("mv-1") as pods:
        await serve(env, "demo", "mv", pods, host="old.example.com", path="/a")
        await env.eventually(
            lambda: _when(env.get("old.example.com", "/a/x"), lambda r: r.status == 200)
        )
        await env.router.sync_now()
        reloads = env.router.driver.reloads
        master_reloads = (await env.router.driver.process.wait_status(5)).reloads
        await env.apply(route("demo", "mv", "new.example.com", "mv", path="/b"))
        r = await env.eventually(
            lambda: _when(env.get("new.example.com", "/b/y"), lambda r: r.status == 200)
        )
        assert r.backend == "mv-1"
        assert (await env.get("old.example.com", "/a/x")).status == 503
        assert (await env.get("new.example.com", "/a")).status == 503
        assert env.router.driver.reloads == reloads
        assert (await env.router.driver.process.wait_status(5)).reloads == master_reloads
        # The files on disk say the same as the running HAProxy.
        prefix = (env.work_dir / "conf" / "os_http_prefix.map").read_text()
        assert "new.example.com/b/" in prefix and "old.example.com" not in prefix
