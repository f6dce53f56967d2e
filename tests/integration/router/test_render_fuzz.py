"""No route field or annotation can inject into HAProxy's configuration.

Hypothesis generates thousands of routes whose names, hosts, paths,
annotations, services, target ports and endpoints carry hostile strings
(newlines, quotes, spaces, ``%[``, backslashes, ``#``, ``$``, unicode, very
long values). They are rendered twice:

* the normal way (admission, then model, then render): every admitted route
  must be rendered (admission and the escaping functions agree);
* bypassing admission (every route "admitted" with its raw host): the
  renderer's escaping is the only defence, and it must either write a value
  safely or leave that one route out.

Every rendered file set must be well-formed, and a sample of them is checked
by the real ``haproxy -c``, which must accept every one.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.hostile import (
    ANNOTATION_KEYS,
    FIXED_HOSTILE,
    HEADER_NAMES,
    HEADER_VALUES,
    HOSTILE_CHARS,
)
from tests.support.tls import TestCA

from shiftnet.api import Endpoints, Route
from shiftnet.router.admission import AdmissionResult, Decision, admit, route_key
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.files import write_file_set
from shiftnet.router.haproxy.render import RenderPaths, RenderResult, render
from shiftnet.router.model import build_model

pytestmark = pytest.mark.integration

# Hypothesis draws the hostile strings; a seeded generator combines them into
# many routes per example, which keeps generation cheap enough for thousands.
hostile = st.one_of(
    st.text(alphabet=st.sampled_from(list(HOSTILE_CHARS)), min_size=1, max_size=24),
    st.text(min_size=1, max_size=16),
)
VALID_HOSTS = ["www.example.com", "a.b.example.org", "x-1.apps.example.com", "h.example.com"]
VALID_PATHS = [
    "",
    "",
    "/",
    "/foo",
    "/foo/",
    "/a/b",
    "/%5B",
    '/q"x',
    "/x\\y",
    "/$v",
    "/%[src]",
    "/a b",
]
# What admission lets through and the renderer must still write safely.
ADMISSIBLE_PATHS = [
    "",
    "/",
    "/foo",
    "/foo/",
    "/%5B",
    '/q"x',
    "/x\\y",
    "/$v",
    "/%[src]",
    "/'a'",
    "/{x}",
    "/;$(id)",
    "/`x`",
    "/" + "%[" * 300,
]
PLAUSIBLE_VALUES = [
    "roundrobin",
    "source",
    "true",
    "false",
    "my_cookie",
    "5s",
    "500ms",
    "10.0.0.0/8 ::1",
    "max-age=31536000;includeSubDomains;preload",
    "/",
    "/v2/",
    "/a%20b",
    "replace",
    "if-none",
    "never",
    "10",
    "100",
]

_CA = TestCA()
_CERT = _CA.issue("secure.example.com")


class _Generator:
    """Builds hostile routes and endpoints from drawn strings with a seeded ``random``."""

    def __init__(self, rng: random.Random, drawn: list[str]) -> None:
        self.rng = rng
        self.bad = FIXED_HOSTILE + drawn
        self.wild = True  # per route: hostile everywhere, or only where admission lets it be

    def pick(self, options: list[Any], bad_share: float = 0.3) -> Any:
        if self.wild and self.rng.random() < bad_share:
            return self.rng.choice(self.bad)
        return self.rng.choice(options)

    def host(self) -> str:
        value = self.pick(VALID_HOSTS, 0.4)
        if self.rng.random() < 0.5:  # a unique host keeps most routes admitted
            value = f"r{self.rng.randrange(10**6)}.{value}"
        return str(value)

    def path(self) -> str:
        value = self.pick(VALID_PATHS if self.wild else ADMISSIBLE_PATHS, 0.3)
        return value if value.startswith("/") or value == "" else "/" + value

    def tls(self) -> dict[str, Any] | None:
        rng = self.rng
        termination = rng.choice(
            [None, None, "edge", "passthrough", "reencrypt"] + (["Edge"] if self.wild else [])
        )
        if termination is None:
            return None
        spec: dict[str, Any] = {"termination": termination}
        policy = rng.choice([None, "None", "Allow", "Redirect"] + (["x"] if self.wild else []))
        if termination == "passthrough" and policy == "Allow":
            policy = None
        if policy is not None:
            spec["insecureEdgeTerminationPolicy"] = policy
        roll = rng.random()
        if roll < 0.4 and (self.wild or termination != "passthrough"):
            spec["certificate"], spec["key"] = _CERT.cert_pem, _CERT.key_pem
        elif roll < 0.6 and self.wild:
            spec["certificate"], spec["key"] = rng.choice(self.bad), rng.choice(self.bad)
        if termination == "reencrypt" and rng.random() < 0.5:
            spec["destinationCACertificate"] = rng.choice(
                [_CA.cert_pem] + (['junk\n"x'] if self.wild else [])
            )
        return spec

    def backend(self) -> dict[str, Any]:
        weight = self.rng.choice([None, 0, 1, 3, 100, 256])
        return {"kind": "Service", "name": self.pick(["svc", "web", "api"], 0.2), "weight": weight}

    def header_actions(self) -> list[dict[str, Any]]:
        rng = self.rng
        out: list[dict[str, Any]] = []
        for _ in range(rng.randrange(4)):
            name = self.pick(HEADER_NAMES, 0.3) if self.wild else rng.choice(HEADER_NAMES[:3])
            if rng.random() < 0.3:
                out.append({"name": name, "action": {"type": "Delete"}})
            else:
                value = (
                    self.pick(HEADER_VALUES, 0.3) if self.wild else rng.choice(HEADER_VALUES[:5])
                )
                out.append({"name": name, "action": {"type": "Set", "set": {"value": value}}})
        return out

    def route(self, index: int) -> Route:
        rng = self.rng
        self.wild = rng.random() < 0.35
        spec: dict[str, Any] = {
            "host": self.host(),
            "path": self.path(),
            "to": self.backend(),
            "alternateBackends": [self.backend() for _ in range(rng.randrange(4))],
            "wildcardPolicy": rng.choice(["None", "None", "Subdomain"]),
        }
        ports: list[Any] = [None, None, 8080, "http", "web", "8443"]
        port = self.pick(ports + ([70000, -1] if self.wild else []), 0.1)
        if port is not None:
            spec["port"] = {"targetPort": port}
        tls = self.tls()
        if tls is not None:
            spec["tls"] = tls
            if tls["termination"] == "passthrough" and not self.wild:
                spec["path"] = ""
        if rng.random() < 0.3 and (self.wild or tls is None or tls["termination"] != "passthrough"):
            spec["httpHeaders"] = {
                "actions": {"request": self.header_actions(), "response": self.header_actions()}
            }
        annotations = {
            rng.choice(ANNOTATION_KEYS): rng.choice(PLAUSIBLE_VALUES + self.bad)
            for _ in range(rng.randrange(7))
        }
        return Route.model_validate(
            {
                "metadata": {
                    "name": f"{self.pick(['route'], 0.3)}{index}",
                    "namespace": self.pick(["ns", "ns", "other"], 0.1),
                    "uid": f"uid-{index}",
                    "creationTimestamp": f"2026-01-01T00:00:{index % 60:02d}Z",
                    "annotations": annotations,
                },
                "spec": spec,
            }
        )

    def endpoints(self, namespace: str, name: str) -> Endpoints:
        rng = self.rng
        ips = [
            self.pick([f"10.{rng.randrange(256)}.0.{rng.randrange(1, 255)}", "fd00::7"], 0.2)
            for _ in range(rng.randrange(6))
        ]
        ports = [
            (self.pick([None, "http", "web"], 0.2), rng.choice([-1, 0, 80, 8080, 70000]))
            for _ in range(rng.randrange(1, 4))
        ]
        return Endpoints.model_validate(
            {
                "metadata": {"name": name, "namespace": namespace},
                "subsets": [
                    {
                        "addresses": [
                            {"ip": ip, "targetRef": {"name": self.pick(["pod"])}} for ip in ips
                        ],
                        "ports": [
                            {"port": p, **({"name": n} if n is not None else {})} for n, p in ports
                        ],
                    }
                ],
            }
        )


@st.composite
def cluster(draw: st.DrawFn) -> tuple[list[Route], list[Endpoints]]:
    drawn = draw(st.lists(hostile, min_size=1, max_size=8))
    gen = _Generator(draw(st.randoms(use_true_random=False)), drawn)
    routes = [gen.route(i) for i in range(draw(st.integers(15, 40)))]
    wanted = sorted({(r.metadata.namespace or "", b.name) for r in routes for b in r.backends()})
    eps = [gen.endpoints(ns, name) for ns, name in wanted if gen.rng.random() < 0.8]
    return routes, eps


CONFIG = RouterConfig(
    http_port=18080,
    https_port=18443,
    stats_port=18936,
    allow_wildcard_routes=True,
    stats_username="admin",
    stats_password='p"$#\\w',
    threads=1,
    max_connections=1000,
)


def _everything_admitted(routes: list[Route]) -> AdmissionResult:
    """Skip admission: every route is served with its raw host (the renderer's last stand)."""
    decisions = {}
    unique: dict[tuple[str, str], Route] = {}
    for r in routes:
        unique[route_key(r)] = r
    for key, r in unique.items():
        decisions[key] = Decision(key, True, (r.spec.host or "").lower())
    return AdmissionResult(decisions=decisions, admitted=tuple(unique.values()))


def _check_well_formed(result: RenderResult) -> None:
    for name, data in result.files.items():
        assert not name.startswith("/") and ".." not in name.split("/"), name
        text = data.decode("ascii")  # only ASCII is ever written
        if name.endswith(".map"):
            for line in text.splitlines():
                key, value = line.split(" ")
                assert key and value, line
        if name == "haproxy.cfg":
            assert all(ch == "\n" or 0x20 <= ord(ch) < 0x7F for ch in text)
            for line in text.splitlines():
                _check_words(line)
            sections = [ln for ln in text.splitlines() if ln and not ln.startswith(" ")]
            assert len(sections) == len(set(sections)), "a section was rendered twice"
            spares = sum(ln.startswith("backend be_spare_") for ln in sections)
            assert spares == 4 * CONFIG.spare_backends
            routes = sum(ln.startswith("backend be_") for ln in sections) - spares
            assert routes == len(set(result.backends.values())) + 1  # shared backends once


def _check_words(line: str) -> None:
    """HAProxy's word syntax: outside double quotes none of ``#$'\\``; inside, ``$ # "`` and
    backslashes only escaped. An injected quote, comment or variable breaks one of these."""
    quoted, i = False, 0
    while i < len(line):
        ch = line[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\":
            assert quoted, f"backslash outside quotes: {line!r}"
            assert i + 1 < len(line), f"dangling backslash: {line!r}"
            i += 1
        elif ch in "#$":
            raise AssertionError(f"unescaped {ch!r}: {line!r}")
        elif ch == "'":
            assert quoted, f"single quote outside double quotes: {line!r}"
        i += 1
    assert not quoted, f"unbalanced quotes: {line!r}"


class _Sampler:
    """Runs ``haproxy -c`` on every n-th rendered configuration."""

    def __init__(self, root: Path, every: int) -> None:
        self.root, self.every, self.seen, self.checked, self.routes = root, every, 0, 0, 0
        self.admitted = self.raw_rendered = self.raw_skipped = 0
        self.header_lines = 0  # route header actions written (spec.httpHeaders)

    def maybe_check(self, result: RenderResult) -> None:
        self.seen += 1
        if self.seen % self.every:
            return
        conf = self.root / "conf"
        write_file_set(conf, result.files)
        proc = subprocess.run(
            ["haproxy", "-c", "-q", "-f", "haproxy.cfg"],
            cwd=conf,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (
            proc.stdout + proc.stderr + result.files["haproxy.cfg"].decode()
        )
        self.checked += 1


@pytest.fixture(scope="module")
def sampler(tmp_path_factory: pytest.TempPathFactory) -> _Sampler:
    root = tmp_path_factory.mktemp("fuzz")
    default = _CA.issue("default.example")
    (root / "default.pem").write_text(default.cert_pem + default.key_pem)
    (root / "run").mkdir()
    return _Sampler(root, every=1)  # haproxy -c on every rendered configuration


# derandomize: CI must not flake on how many routes the draws happened to hold
@settings(max_examples=70, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=cluster())
def test_hostile_routes_render_to_configurations_haproxy_accepts(
    sampler: _Sampler, data: tuple[list[Route], list[Endpoints]]
) -> None:
    routes, eps = data
    paths = RenderPaths(str(sampler.root / "run"), str(sampler.root / "default.pem"))
    sampler.routes += len(routes)

    admitted = admit(routes, [], CONFIG)
    normal = render(build_model(admitted, eps), CONFIG, paths)
    assert normal.skipped == {}, normal.skipped  # admission refuses what cannot be written
    assert set(normal.backends) == {route_key(r) for r in admitted.admitted}
    _check_well_formed(normal)
    sampler.maybe_check(normal)

    raw = render(build_model(_everything_admitted(routes), eps), CONFIG, paths)
    _check_well_formed(raw)
    sampler.admitted += len(normal.backends)
    sampler.header_lines += normal.files["haproxy.cfg"].count(b'-header "')
    sampler.raw_rendered += len(raw.backends)
    sampler.raw_skipped += len(raw.skipped)
    sampler.maybe_check(raw)


def test_fuzz_covered_enough(sampler: _Sampler) -> None:
    """Runs after the property test in this module: it really rendered and checked a lot."""
    assert sampler.routes >= 1000, sampler.routes
    assert sampler.checked == sampler.seen >= 100, (sampler.checked, sampler.seen)
    # Both paths really ran: many routes admitted and rendered, and the escaping
    # functions refused some raw values on their own.
    assert sampler.admitted >= 200, sampler.admitted
    assert sampler.header_lines >= 50, sampler.header_lines
    assert sampler.raw_rendered >= 200 and sampler.raw_skipped >= 20, (
        sampler.raw_rendered,
        sampler.raw_skipped,
    )
