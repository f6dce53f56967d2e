"""The rendered file set for a representative corpus, pinned byte for byte.

Why: the HAProxy files are what the router promises; any change to how a
section, a ``server`` line, a map or the crt-list is written must show up
here as a reviewed difference, not slip through a refactor. The corpus
covers every termination and insecure policy, wildcards, every annotation
the writer reads, shared backends, a route without pods and one with more
pods than the smallest slot count. Certificates are made per run, so the
``.pem`` files are compared by name only (their bytes are the inputs').

To accept an intended change: ``SHIFTNET_WRITE_RENDERED=1 pytest`` this file,
then review the diff of ``tests/unit/router/rendered/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.support import routes as f
from tests.support.tls import TestCA

import shiftnet.router.annotations as ann
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.render import RenderPaths, render_haproxy
from shiftnet.router.model import build_model

PINNED = Path(__file__).parent / "rendered"
PATHS = RenderPaths(run_dir="/run/shiftnet", default_certificate="/etc/shiftnet/default.pem")
CONFIGS = {
    "shared": RouterConfig(
        http_port=8080,
        https_port=8443,
        stats_port=1936,
        allow_wildcard_routes=True,
        max_connections=2000,
        threads=2,
        spare_backends=1,
        stats_username="admin",
        stats_password="pw",
        file_descriptor_limit=8192,
    ),
    "own": RouterConfig(
        http_port=80,
        https_port=443,
        stats_port=0,
        allow_wildcard_routes=True,
        max_connections=5000,
        threads=0,
        spare_backends=0,
        share_backends=False,
        set_forwarded_headers="if-none",
        load_balance_algorithm="leastconn",
        errorfile_503="/etc/errors/503.http",
        errorfile_404="/etc/errors/404.http",
    ),
}


def _corpus() -> tuple[list, list]:
    ca = TestCA()
    pair = ca.issue("secure.example.com", "*.wild.example.com")
    cert = {"certificate": pair.cert_pem, "key": pair.key_pem, "caCertificate": ca.cert_pem}
    routes = [
        f.route("plain"),
        f.route("path", "plain.example.com", path="/api/"),
        f.route("deep", "plain.example.com", path="/api/v2", service="many"),
        f.route("wild", "x.wild.example.com", wildcard=True),
        f.route(
            "edge",
            "secure.example.com",
            tls={"termination": "edge", **cert, "insecureEdgeTerminationPolicy": "Redirect"},
        ),
        f.route(
            "edge-allow",
            "allow.example.com",
            tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Allow"},
        ),
        f.route(
            "edge-wild", "a.wild.example.com", wildcard=True, tls={"termination": "edge", **cert}
        ),
        f.route(
            "re",
            "re.example.com",
            tls={"termination": "reencrypt", "destinationCACertificate": ca.cert_pem},
        ),
        f.route("re-plain", "re2.example.com", tls={"termination": "reencrypt"}),
        f.route(
            "pass",
            "pass.example.com",
            tls={"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"},
        ),
        f.route(
            "pass-wild", "p.passwild.example.com", wildcard=True, tls={"termination": "passthrough"}
        ),
        f.route("twin-a", "twin-a.example.com", service="twin"),
        f.route("twin-b", "twin-b.example.com", service="twin"),
        f.route("nopods", service="empty"),
        f.route("split", service="svc", alternates=[("many", 3), ("twin", 0)], weight=2),
        f.route(
            "annotated",
            "annotated.example.com",
            path="/app",
            tls={"termination": "edge"},
            annotations={
                ann.BALANCE: "source",
                ann.TIMEOUT: "5s",
                ann.TIMEOUT_TUNNEL: "1h",
                ann.IP_ALLOWLIST: "10.0.0.0/8 192.168.1.1",
                ann.HSTS_HEADER: "max-age=31536000;includeSubDomains",
                ann.REWRITE_TARGET: "/",
                ann.COOKIE_NAME: "my_cookie",
                ann.SET_FORWARDED_HEADERS: "replace",
                ann.RATE_LIMIT: "true",
                ann.RATE_LIMIT_CONCURRENT_TCP: "10",
                ann.RATE_LIMIT_RATE_TCP: "100",
                ann.RATE_LIMIT_RATE_HTTP: "50",
                ann.POD_CONCURRENT_CONNECTIONS: "7",
                ann.HEALTH_CHECK_INTERVAL: "3s",
            },
        ),
        f.route(
            "nocookie",
            service="many",
            annotations={ann.DISABLE_COOKIES: "true", ann.BALANCE: "random"},
        ),
        f.route(
            "tcp-limits",
            "tcp.example.com",
            tls={"termination": "passthrough"},
            annotations={
                ann.TIMEOUT: "2s",
                ann.IP_ALLOWLIST: "10.1.0.0/16",
                ann.RATE_LIMIT: "true",
                ann.RATE_LIMIT_CONCURRENT_TCP: "3",
            },
        ),
    ]
    eps = [
        f.endpoints("svc", ["10.0.0.1"]),
        f.endpoints("many", [f"10.0.1.{i}" for i in range(1, 6)]),
        f.endpoints("twin", ["10.0.2.1", "10.0.2.2"]),
    ]
    return routes, eps


def _comparable(files: dict[str, bytes]) -> dict[str, bytes]:
    return {n: (b"<pem>\n" if n.endswith(".pem") else d) for n, d in files.items()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rendered_files_are_the_pinned_ones(name: str) -> None:
    config = CONFIGS[name]
    routes, eps = _corpus()
    got = _comparable(render_haproxy(build_model(admit(routes, [], config), eps), config, PATHS))
    directory = PINNED / name
    if os.environ.get("SHIFTNET_WRITE_RENDERED"):
        for file_name, data in got.items():
            (directory / file_name).parent.mkdir(parents=True, exist_ok=True)
            (directory / file_name).write_bytes(data)
    pinned = {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }
    assert sorted(got) == sorted(pinned)
    for file_name in sorted(got):
        assert got[file_name] == pinned[file_name], file_name
