"""The rendered configuration routes real requests to the pods the routes name.

Renders admitted routes straight into a real HAProxy (no driver): host and
path lookups through the longest-prefix maps, wildcards, edge / passthrough /
reencrypt by SNI, insecure policies, weights and rewrite-target, against
backends on loopback that answer with their names.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support import routes as f
from tests.support.backends import Backend, backends
from tests.support.ports import free_port
from tests.support.router import request, sha256_of_pem
from tests.support.tls import TestCA

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.files import write_file_set
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def running_haproxy(conf: Path, ports: list[int]) -> Iterator[None]:
    """HAProxy in the foreground on ``conf/haproxy.cfg``; stopped by its pid at the end."""
    proc = subprocess.Popen(
        ["haproxy", "-db", "-f", "haproxy.cfg"],
        cwd=conf,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                out = proc.stdout.read().decode() if proc.stdout else ""
                raise AssertionError(f"haproxy exited: {out}")
            try:
                for port in ports:
                    request(port, "probe", "/_______internal_router_healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _eps(name: str, pods: list[Backend]) -> object:
    return f.endpoints(name, [b.ip for b in pods], [("http", pods[0].port)])


def test_rendered_configuration_routes_requests(tmp_path: Path) -> None:
    ca = TestCA()
    edge_cert = ca.issue("secure.example.com")
    default = ca.issue("default.example")
    pod_cert = ca.issue("127.0.0.1")
    http_port, https_port = free_port(), free_port()
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "default.pem").write_text(default.cert_pem + default.key_pem)
    with (
        backends("root", "foo", "foobar-a", port=None) as (root, foo, foo2),
        backends("w1", "w3") as (w1, w3),
        backends("tls-pod", tls=pod_cert) as (tls_pod,),
        backends("wild") as (wild,),
    ):
        routes = [
            f.route("root", "www.example.com", service="root"),
            f.route("foo", "www.example.com", path="/foo", service="foo"),
            f.route(
                "foobar",
                "www.example.com",
                path="/foo/bar",
                service="foobar",
                annotations={"haproxy.router.openshift.io/rewrite-target": "/"},
            ),
            f.route(
                "weighted",
                "weighted.example.com",
                service="w1",
                weight=1,
                alternates=[("w3", 3)],
                annotations={
                    "haproxy.router.openshift.io/balance": "roundrobin",
                    "haproxy.router.openshift.io/disable_cookies": "true",
                },
            ),
            f.route("zero", "zero.example.com", service="w1", weight=0),
            f.route(
                "edge",
                "secure.example.com",
                service="root",
                tls={
                    "termination": "edge",
                    "certificate": edge_cert.cert_pem,
                    "key": edge_cert.key_pem,
                    "insecureEdgeTerminationPolicy": "Redirect",
                },
            ),
            f.route(
                "edge-none", "private.example.com", service="root", tls={"termination": "edge"}
            ),
            f.route(
                "edge-allow",
                "both.example.com",
                service="root",
                tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Allow"},
            ),
            f.route("pt", "pt.example.com", service="tls", tls={"termination": "passthrough"}),
            f.route(
                "re",
                "re.example.com",
                service="tls",
                tls={"termination": "reencrypt", "destinationCACertificate": ca.cert_pem},
            ),
            f.route("wild", "any.apps.example.com", service="wild", wildcard=True),
        ]
        eps = [
            _eps("root", [root]),
            _eps("foo", [foo]),
            _eps("foobar", [foo2]),
            _eps("w1", [w1]),
            _eps("w3", [w3]),
            _eps("tls", [tls_pod]),
            _eps("wild", [wild]),
        ]
        config = RouterConfig(
            http_port=http_port,
            https_port=https_port,
            stats_port=0,
            threads=1,
            max_connections=1000,
            allow_wildcard_routes=True,
        )
        admission = admit(routes, [], config)
        assert all(d.admitted for d in admission.decisions.values()), admission.decisions
        result = render(
            build_model(admission, eps),
            config,
            RenderPaths(str(run), str(tmp_path / "default.pem")),
        )
        assert result.skipped == {}
        write_file_set(tmp_path / "conf", result.files)
        with running_haproxy(tmp_path / "conf", [http_port]):
            get = lambda host, path="/": request(http_port, host, path)  # noqa: E731

            # Host lookups: case-insensitive, port ignored; longest path wins; /foo != /foobar.
            assert get("WWW.Example.COM:80").backend == "root"
            assert get("www.example.com", "/foo").backend == "foo"
            assert get("www.example.com", "/foo/").backend == "foo"
            assert get("www.example.com", "/foo/x?q=1").backend == "foo"
            assert get("www.example.com", "/foobar").backend == "root"
            reply = get("www.example.com", "/foo/bar/baz")
            assert reply.backend == "foobar-a"
            assert reply.headers["x-seen-path"] == "/baz"  # rewrite-target "/"
            assert get("unknown.example.com").status == 503

            # Wildcard: one label below the parent domain, exact hosts first.
            assert get("x.apps.example.com").backend == "wild"
            assert get("a.b.apps.example.com").status == 503

            # Insecure policies on the HTTP port.
            redirect = get("secure.example.com", "/p?q=1")
            assert redirect.status == 302
            assert redirect.headers["location"] == f"https://secure.example.com:{https_port}/p?q=1"
            assert get("private.example.com").status == 503
            assert get("both.example.com").backend == "root"

            # Weights 0 everywhere -> 503; 1:3 -> 25 % / 75 %.
            assert get("zero.example.com").status == 503
            counts = Counter(get("weighted.example.com").backend for _ in range(200))
            assert 30 <= counts["w1"] <= 70 and counts["w1"] + counts["w3"] == 200, counts

            # Forwarded headers and httpoxy.
            seen = json.loads(
                request(http_port, "Both.example.com", headers={"Proxy": "evil"}).headers[
                    "x-seen-headers"
                ]
            )
            assert seen["x-forwarded-for"] == "127.0.0.1"
            assert seen["forwarded"] == "for=127.0.0.1;host=both.example.com;proto=http"
            assert seen["host"] == "both.example.com"
            assert "proxy" not in {k.lower() for k in seen}

            # TLS by SNI.
            tls = lambda host, sni="": request(https_port, host, tls=True, sni=sni)  # noqa: E731
            edge = tls("secure.example.com")
            assert edge.backend == "root"
            assert edge.cert_sha256 == sha256_of_pem(edge_cert.cert_pem)
            no_sni = request(https_port, "secure.example.com", tls=True, sni=None)
            assert no_sni.cert_sha256 == sha256_of_pem(default.cert_pem)
            assert tls("both.example.com").backend == "root"
            passthrough = tls("pt.example.com")
            assert passthrough.backend == "tls-pod"
            assert passthrough.cert_sha256 == sha256_of_pem(pod_cert.cert_pem)
            reencrypt = tls("re.example.com")
            assert reencrypt.backend == "tls-pod"
            assert reencrypt.cert_sha256 == sha256_of_pem(default.cert_pem)


def test_error_pages_stats_and_health(tmp_path: Path) -> None:
    page_404, page_503 = tmp_path / "404.http", tmp_path / "503.http"
    page_404.write_bytes(b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\nno route\n")
    page_503.write_bytes(
        b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nno pod\n"
    )
    default = TestCA().issue("default.example")
    (tmp_path / "default.pem").write_text(default.cert_pem + default.key_pem)
    (tmp_path / "run").mkdir()
    http_port, https_port, stats_port = free_port(), free_port(), free_port()
    config = RouterConfig(
        http_port=http_port,
        https_port=https_port,
        stats_port=stats_port,
        threads=1,
        max_connections=500,
        bind_address="127.0.0.1",
        stats_username="admin",
        stats_password="s3cret",
        errorfile_404=str(page_404),
        errorfile_503=str(page_503),
    )
    model = build_model(admit([f.route("a", "a.example.com")], [], config), [])
    paths = RenderPaths(str(tmp_path / "run"), str(tmp_path / "default.pem"))
    result = render(model, config, paths)
    write_file_set(tmp_path / "conf", result.files)
    with running_haproxy(tmp_path / "conf", [http_port, stats_port]):
        unknown = request(http_port, "unknown.example.com")
        assert (unknown.status, unknown.body) == (404, "no route\n")
        no_pods = request(http_port, "a.example.com")  # route before its endpoints
        assert (no_pods.status, no_pods.body) == (503, "no pod\n")
        assert request(stats_port, "x", "/healthz").status == 200
        assert request(stats_port, "x", "/").status == 401
        auth = {"Authorization": "Basic " + base64.b64encode(b"admin:s3cret").decode()}
        assert request(stats_port, "x", "/", headers=auth).status == 200


def test_annotations_take_effect(tmp_path: Path) -> None:
    default = TestCA().issue("default.example")
    (tmp_path / "default.pem").write_text(default.cert_pem + default.key_pem)
    (tmp_path / "run").mkdir()
    http_port, https_port = free_port(), free_port()
    config = RouterConfig(
        http_port=http_port,
        https_port=https_port,
        stats_port=0,
        threads=1,
        max_connections=500,
        bind_address="127.0.0.1",
    )
    with backends("a", "b", "c", port=free_port()) as pods:
        routes = [
            f.route(
                "checked",
                "checked.example.com",
                service="three",
                annotations={
                    "haproxy.router.openshift.io/balance": "roundrobin",
                    "haproxy.router.openshift.io/disable_cookies": "true",
                    "router.openshift.io/haproxy.health.check.interval": "100ms",
                },
            ),
            f.route(
                "denied",
                "denied.example.com",
                service="three",
                annotations={"haproxy.router.openshift.io/ip_allowlist": "10.0.0.0/8 192.168.0.1"},
            ),
            f.route(
                "allowed",
                "allowed.example.com",
                service="three",
                annotations={"haproxy.router.openshift.io/ip_allowlist": "10.0.0.0/8 127.0.0.0/8"},
            ),
            f.route(
                "hsts",
                "hsts.example.com",
                service="three",
                tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Allow"},
                annotations={"haproxy.router.openshift.io/hsts_header": "max-age=600"},
            ),
            f.route(
                "limited",
                "limited.example.com",
                service="three",
                annotations={
                    "haproxy.router.openshift.io/rate-limit-connections": "true",
                    "haproxy.router.openshift.io/rate-limit-connections.rate-http": "5",
                },
            ),
            f.route("sticky", "sticky.example.com", service="three"),
        ]
        eps = [_eps("three", pods)]
        model = build_model(admit(routes, [], config), eps)
        paths = RenderPaths(str(tmp_path / "run"), str(tmp_path / "default.pem"))
        write_file_set(tmp_path / "conf", render(model, config, paths).files)
        with running_haproxy(tmp_path / "conf", [http_port]):
            # roundrobin over three pods splits evenly.
            counts = Counter(request(http_port, "checked.example.com").backend for _ in range(300))
            assert set(counts) == {"a", "b", "c"}
            assert all(90 <= n <= 110 for n in counts.values()), counts

            assert request(http_port, "denied.example.com").status == 403
            assert request(http_port, "allowed.example.com").status == 200

            assert (
                request(https_port, "hsts.example.com", tls=True).headers[
                    "strict-transport-security"
                ]
                == "max-age=600"
            )
            assert "strict-transport-security" not in request(http_port, "hsts.example.com").headers

            statuses = [request(http_port, "limited.example.com").status for _ in range(12)]
            assert statuses[:5] == [200] * 5 and 429 in statuses

            # Sticky cookie: the same pod for a client that sends the cookie back.
            first = request(http_port, "sticky.example.com")
            cookie = first.headers["set-cookie"].split(";", 1)[0]
            assert "httponly" in first.headers["set-cookie"].lower()
            again = {
                request(http_port, "sticky.example.com", headers={"Cookie": cookie}).backend
                for _ in range(10)
            }
            assert again == {first.backend}

            # A dead pod stops receiving traffic once its health check fails.
            pods[0].stop()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                seen = {request(http_port, "checked.example.com").status for _ in range(6)}
                if seen == {200}:
                    break
                time.sleep(0.2)
            answers = Counter(request(http_port, "checked.example.com").backend for _ in range(30))
            assert set(answers) == {"b", "c"}, answers
