"""render_haproxy: determinism, map contents, per-termination backends, spare slots."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
from tests.support import routes as f
from tests.support.tls import TestCA

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import render as r
from shiftnet.router.haproxy.render import RenderPaths, render, render_haproxy, slot_servers
from shiftnet.router.model import L7Model, Rule, Server, build_model

CONFIG = RouterConfig(
    http_port=8080,
    https_port=8443,
    stats_port=1936,
    allow_wildcard_routes=True,
    max_connections=2000,
    threads=2,
    share_backends=False,  # these tests read one backend per route (test_shared_backends.py)
)
PATHS = RenderPaths(run_dir="/var/run/shiftnet", default_certificate="/etc/shiftnet/default.pem")


def build(routes: list, eps: list | None = None, config: RouterConfig = CONFIG) -> L7Model:
    return build_model(admit(routes, [], config), eps or [])


def files(routes: list, eps: list | None = None, config: RouterConfig = CONFIG) -> dict[str, str]:
    out = render_haproxy(build(routes, eps, config), config, PATHS)
    return {k: v.decode() for k, v in out.items()}


def cfg(routes: list, eps: list | None = None, config: RouterConfig = CONFIG) -> str:
    return files(routes, eps, config)["haproxy.cfg"]


def backend_block(text: str, name: str) -> str:
    m = re.search(rf"^backend {re.escape(name)}(?: from \S+)?\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    assert m, f"backend {name} not rendered"
    return m.group(1)


def map_entries(out: dict[str, str], name: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in out[name].splitlines())


# ------------------------------------------------------------------ determinism


def test_render_is_deterministic_and_independent_of_input_order() -> None:
    routes = [
        f.route(f"r{i}", f"h{i % 7}.example.com", path=f"/p{i}", service=f"s{i % 3}")
        for i in range(40)
    ]
    eps = [f.endpoints(f"s{i}", [f"10.0.{i}.{j}" for j in range(1, 5)]) for i in range(3)]
    first = render_haproxy(build(routes, eps), CONFIG, PATHS)
    assert first == render_haproxy(build(routes, eps), CONFIG, PATHS)
    rng = random.Random(7)
    for _ in range(3):
        rng.shuffle(routes)
        rng.shuffle(eps)
        assert render_haproxy(build(routes, eps), CONFIG, PATHS) == first


def test_file_set_names_are_relative_and_maps_referenced_exist() -> None:
    out = files([f.route("a")])
    assert all(not name.startswith("/") for name in out)
    for name in re.findall(r'map_(?:str|beg)\("([^"]+)"\)', out["haproxy.cfg"]):
        assert name in out
    assert "crt-list.txt" in out and "error-page-503.http" in out


def test_no_regex_maps_anywhere() -> None:
    text = cfg([f.route("a", path="/x"), f.route("w", "a.apps.example.com", wildcard=True)])
    assert "map_reg" not in text and "map_sub" not in text and "map_end" not in text


# ------------------------------------------------------------------ maps


def test_host_and_path_keys() -> None:
    out = files(
        [
            f.route("root", "www.example.com"),
            f.route("foo", "www.example.com", path="/foo"),
            f.route("slash", "www.example.com", path="/foo/bar/"),
        ]
    )
    assert map_entries(out, r.HTTP_PREFIX_MAP) == {
        "www.example.com/": "be_http:ns:root",
        "www.example.com/foo/": "be_http:ns:foo",
        "www.example.com/foo/bar/": "be_http:ns:slash",
    }
    assert out[r.TLS_PREFIX_MAP] == out[r.TLS_WILDCARD_PREFIX_MAP] == ""


def test_keys_match_the_path_and_below_but_never_a_longer_segment() -> None:
    # Keys and request keys both end in "/": "host/foo/" is a prefix of the request
    # keys of /foo ("host/foo/") and /foo/x ("host/foo/x/"), not of /foobar's.
    key = r.lookup_key("h.example.com", "/foo")
    assert key == "h.example.com/foo/" == r.lookup_key("h.example.com", "/foo//")
    assert "h.example.com/foo/".startswith(key) and "h.example.com/foo/x/".startswith(key)
    assert not "h.example.com/foobar/".startswith(key)
    assert r.lookup_key("h.example.com", "/") == r.lookup_key("h.example.com", "")
    assert r.lookup_key("h.example.com", "") == "h.example.com/"


def test_same_normalized_path_longer_raw_path_wins() -> None:
    out = files(
        [
            f.route("a", "h.example.com", path="/foo", created="2026-01-01T00:00:00Z"),
            f.route("b", "h.example.com", path="/foo/", created="2026-01-02T00:00:00Z"),
        ]
    )
    assert map_entries(out, r.HTTP_PREFIX_MAP) == {"h.example.com/foo/": "be_http:ns:b"}


def test_wildcard_routes_use_the_wildcard_maps_only() -> None:
    out = files([f.route("w", "any.apps.example.com", wildcard=True, path="/api")])
    assert map_entries(out, r.HTTP_WILDCARD_PREFIX_MAP) == {"apps.example.com/api/": "be_http:ns:w"}
    assert out[r.HTTP_PREFIX_MAP] == ""


def test_tls_maps_and_insecure_policies() -> None:
    out = files(
        [
            f.route("none", "none.example.com", tls={"termination": "edge"}),
            f.route(
                "allow",
                "allow.example.com",
                tls={"termination": "edge", "insecureEdgeTerminationPolicy": "Allow"},
            ),
            f.route(
                "redir",
                "redir.example.com",
                tls={"termination": "reencrypt", "insecureEdgeTerminationPolicy": "Redirect"},
            ),
            f.route("pt", "pt.example.com", tls={"termination": "passthrough"}),
            f.route(
                "ptr",
                "ptr.example.com",
                tls={"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"},
            ),
            f.route("ptw", "x.pt.example.org", wildcard=True, tls={"termination": "passthrough"}),
        ]
    )
    assert map_entries(out, r.HTTP_PREFIX_MAP) == {
        "allow.example.com/": "be_edge_http:ns:allow",
        "redir.example.com/": r.REDIRECT_BACKEND,
        "ptr.example.com/": r.REDIRECT_BACKEND,
    }
    assert map_entries(out, r.TLS_PREFIX_MAP) == {
        "allow.example.com/": "be_edge_http:ns:allow",
        "none.example.com/": "be_edge_http:ns:none",
        "redir.example.com/": "be_secure:ns:redir",
    }
    assert map_entries(out, r.SNI_PASSTHROUGH_MAP) == {
        "pt.example.com": "be_tcp:ns:pt",
        "ptr.example.com": "be_tcp:ns:ptr",
    }
    assert map_entries(out, r.SNI_PASSTHROUGH_WILDCARD_MAP) == {"pt.example.org": "be_tcp:ns:ptw"}
    assert set(map_entries(out, r.SNI_TERMINATE_MAP)) == {
        "allow.example.com",
        "none.example.com",
        "redir.example.com",
    }
    assert "location https://%[var(txn.host)]:8443%[capture.req.uri] code 302" in out["haproxy.cfg"]


def test_route_certificates_go_to_the_crt_list() -> None:
    ca = TestCA()
    kp = ca.issue("secure.example.com")
    wild = ca.issue("*.apps.example.com")
    out = files(
        [
            f.route(
                "edge",
                "secure.example.com",
                tls={
                    "termination": "edge",
                    "certificate": kp.cert_pem,
                    "key": kp.key_pem,
                    "caCertificate": ca.cert_pem,
                },
            ),
            f.route(
                "w",
                "x.apps.example.com",
                wildcard=True,
                tls={"termination": "edge", "certificate": wild.cert_pem, "key": wild.key_pem},
            ),
            f.route("nocert", "plain.example.com", tls={"termination": "edge"}),
        ]
    )
    assert out["crt-list.txt"] == (
        "certs/ns,edge.pem secure.example.com\ncerts/ns,w.pem *.apps.example.com\n"
    )
    pem = out["certs/ns,edge.pem"]
    assert pem.count("BEGIN CERTIFICATE") == 2 and "PRIVATE KEY" in pem
    assert 'crt "/etc/shiftnet/default.pem" crt-list "crt-list.txt"' in out["haproxy.cfg"]


# ------------------------------------------------------------------ backends


def test_backend_per_termination() -> None:
    ca = TestCA()
    eps = [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]
    text = cfg(
        [
            f.route("plain"),
            f.route("edge", tls={"termination": "edge"}),
            f.route("pt", tls={"termination": "passthrough"}),
            f.route(
                "re", tls={"termination": "reencrypt", "destinationCACertificate": ca.cert_pem}
            ),
            f.route("re-noca", tls={"termination": "reencrypt"}),
        ],
        eps,
    )
    plain = backend_block(text, "be_http:ns:plain")
    assert "mode http" in plain and "balance leastconn" in plain
    assert re.search(r"cookie [0-9a-f]{32} insert indirect nocache httponly\n", plain)
    edge = backend_block(text, "be_edge_http:ns:edge")
    assert "insert indirect nocache httponly secure" in edge
    pt = backend_block(text, "be_tcp:ns:pt")
    assert "mode tcp" in pt and "balance source" in pt and "hash-type consistent" in pt
    assert "cookie" not in pt and "forwardfor" not in pt
    re_block = backend_block(text, "be_secure:ns:re")
    assert 'ssl verify required ca-file "cacerts/ns,re.pem"' in re_block
    assert "ssl verify none" in backend_block(text, "be_secure:ns:re-noca")
    # Two members: health checks on every slot line.
    assert all("check inter 5s" in line for line in plain.splitlines() if "server " in line)


def test_single_member_has_no_health_check() -> None:
    block = backend_block(cfg([f.route("a")], [f.endpoints("svc", ["10.0.0.1"])]), "be_http:ns:a")
    assert "check" not in block


def test_spare_backends_per_kind_look_like_plain_routes() -> None:
    config = dataclasses.replace(CONFIG, spare_backends=2)
    text = cfg([f.route("a")], [f.endpoints("svc", ["10.0.0.1"])], config)
    for prefix in ("be_spare_http", "be_spare_edge", "be_spare_secure", "be_spare_tcp"):
        for i in range(2):
            block = backend_block(text, f"{prefix}:{i}")
            servers = [line for line in block.splitlines() if "server " in line]
            assert len(servers) == 4 and all(line.endswith("weight 0 disabled") for line in servers)
            assert "check" not in block  # a checked line costs a descriptor even when disabled
        assert f"{prefix}:2" not in text
    assert "cookie" not in backend_block(text, "be_spare_tcp:0")
    assert " secure" in backend_block(text, "be_spare_edge:0")
    assert "ssl verify none" in backend_block(text, "be_spare_secure:0")
    none = dataclasses.replace(CONFIG, spare_backends=0)
    assert "be_spare" not in cfg([f.route("a")], [], none)


def test_annotations_render() -> None:
    route = f.route(
        "a",
        tls={"termination": "edge"},
        path="/app",
        annotations={
            "haproxy.router.openshift.io/balance": "source",
            "haproxy.router.openshift.io/timeout": "2m",
            "haproxy.router.openshift.io/timeout-tunnel": "2h",
            "haproxy.router.openshift.io/ip_allowlist": "10.0.0.0/8 192.168.1.7",
            "haproxy.router.openshift.io/hsts_header": "max-age=600 ; preload",
            "haproxy.router.openshift.io/rewrite-target": "/v2/",
            "haproxy.router.openshift.io/set-forwarded-headers": "replace",
            "haproxy.router.openshift.io/rate-limit-connections": "true",
            "haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp": "10",
            "haproxy.router.openshift.io/rate-limit-connections.rate-http": "50",
            "haproxy.router.openshift.io/pod-concurrent-connections": "7",
            "router.openshift.io/cookie_name": "sticky",
            "router.openshift.io/haproxy.health.check.interval": "1500ms",
        },
    )
    eps = [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]
    out = files([route], eps)
    block = backend_block(out["haproxy.cfg"], "be_edge_http:ns:a")
    for expected in (
        "balance source",
        "hash-type consistent",
        "timeout server 2m",
        "timeout tunnel 2h",
        'http-request deny if !{ src -f "allowlists/ns,a.txt" }',
        'http-response set-header Strict-Transport-Security "max-age=600;preload" if { ssl_fc }',
        'http-request replace-path "^/app/?(.*)\\$" "/v2/\\\\1"',
        "tcp-request content track-sc2 src",
        "tcp-request content reject if { sc_conn_cur(2) gt 10 }",
        "http-request deny deny_status 429 if { sc_http_req_rate(2) gt 50 }",
        'cookie "sticky" insert',
        "check inter 1500ms maxconn 7",
    ):
        assert expected in block, expected
    assert out["allowlists/ns,a.txt"] == "10.0.0.0/8\n192.168.1.7/32\n"
    assert "backend be_edge_http:ns:a from fwd_replace\n" in out["haproxy.cfg"]
    replace = re.search(
        r"^defaults fwd_replace from base\n(.*?)\n\n", out["haproxy.cfg"], re.S | re.M
    )
    assert replace and "  http-request del-header X-Forwarded-For\n" in replace.group(1)


def test_disable_cookies_and_forwarded_never() -> None:
    block = backend_block(
        cfg(
            [
                f.route(
                    "a",
                    annotations={
                        "haproxy.router.openshift.io/disable_cookies": "true",
                        "haproxy.router.openshift.io/set-forwarded-headers": "never",
                    },
                )
            ]
        ),
        "be_http:ns:a",
    )
    assert "cookie" not in block and "forwardfor" not in block and "Forwarded" not in block
    assert "backend be_http:ns:a from base\n" in cfg(
        [f.route("a", annotations={"haproxy.router.openshift.io/set-forwarded-headers": "never"})]
    )


def test_forwarded_rules_are_written_once_per_policy() -> None:
    text = cfg(
        [f.route(f"r{i}") for i in range(50)], config=dataclasses.replace(CONFIG, spare_backends=0)
    )
    assert text.count("http-request add-header Forwarded") == 2  # append and if-none sections
    assert text.count("backend be_http:") == 50
    assert text.count(" from fwd_append\n") == 50


def test_global_frontends_stats_and_errorfiles() -> None:
    config = dataclasses.replace(
        CONFIG,
        stats_username="admin",
        stats_password="s3cret",
        errorfile_404="/etc/404.http",
        hard_stop_after_ms=45_000,
    )
    out = files([f.route("a")], config=config)
    text = out["haproxy.cfg"]
    for expected in (
        "maxconn 2000",
        "nbthread 2",
        "hard-stop-after 45s",
        'stats socket "/var/run/shiftnet/admin.sock" mode 600 level admin expose-fd listeners',
        "bind 127.0.0.1:8080",
        "bind 127.0.0.1:8443",
        "bind 127.0.0.1:1936",
        "stats hide-version",
        "http-request del-header Proxy",
        "http-request set-header Host %[req.hdr(Host),lower]",
        "monitor-uri /healthz",
        'stats auth "admin:s3cret"',
        "errorfile 503 error-page-503.http",
        'errorfile 404 "/etc/404.http"',
        'server fe_sni "unix@/var/run/shiftnet/fe_sni.sock" send-proxy-v2',
        'bind "unix@/var/run/shiftnet/fe_sni.sock" mode 600 accept-proxy ssl',
    ):
        assert expected in text, expected
    assert out["error-page-503.http"].startswith("HTTP/1.0 503 Service Unavailable\r\n")


# ------------------------------------------------------------------ spare slots


def _normalized(text: str) -> str:
    """The config with address, port, weight and disabled normalised away (the driver's view),
    and its identity line (a digest of the rest)."""
    text = re.sub(r"^  description config-sha256:\S+$", "  description ID", text, flags=re.M)
    text = re.sub(r"^(  server \S+) \S+", r"\1 ADDR", text, flags=re.M)
    return re.sub(r" weight \d+( disabled)?$", " WEIGHT", text, flags=re.M)


def test_member_changes_only_touch_address_weight_and_state() -> None:
    route = f.route("a")
    two = cfg([route], [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])])
    three = cfg([route], [f.endpoints("svc", ["10.0.0.1", "10.0.0.2", "10.0.0.7"])])
    assert two != three
    assert _normalized(two) == _normalized(three)
    block = backend_block(three, "be_http:ns:a")
    servers = [ln for ln in block.splitlines() if ln.startswith("  server ")]
    assert len(servers) == 4
    assert sum(ln.endswith(" weight 0 disabled") for ln in servers) == 1
    assert all(" 127.0.0.1:1 " in ln for ln in servers if ln.endswith("disabled"))


def test_route_before_endpoints_renders_spare_slots_only() -> None:
    block = backend_block(cfg([f.route("a")]), "be_http:ns:a")
    servers = [ln for ln in block.splitlines() if ln.startswith("  server ")]
    assert len(servers) == 4 and all(ln.endswith(" weight 0 disabled") for ln in servers)


def test_slots_are_stable_when_another_member_leaves() -> None:
    members = [Server(f"10.0.0.{i}", 8080, "ns_svc", "", 256) for i in range(1, 6)]
    before = {s: f"s{i}" for i, s in enumerate(slot_servers(members)) if s}
    for gone in members:
        rest = [m for m in members if m is not gone]
        after = {s: f"s{i}" for i, s in enumerate(slot_servers(rest)) if s}
        # A member sitting in its home slot (its hash) keeps it; only members that
        # had been pushed along by a collision may move.
        homes = {m: f"s{r.home_slot(m, 8)}" for m in rest}
        assert all(after[m] == before[m] for m in rest if before[m] == homes[m])
        assert sum(after[m] != before[m] for m in rest) <= 1
    assert len(slot_servers(members)) == 8
    assert [r.slot_count(n) for n in (0, 3, 4, 7, 8, 100)] == [4, 4, 8, 8, 16, 128]


# ------------------------------------------------------------------ hostile values


def test_unrenderable_route_is_skipped_not_the_others() -> None:
    good = f.route("good", "good.example.com")
    bad = f.route("bad", "bad.example.com")
    m = build(
        [good, bad],
        [f.endpoints("svc", ["10.0.0.1"])],
    )
    broken = dataclasses.replace(
        m.policies[0], rule=Rule(host="bad.example.com", path="/x y\n", wildcard=False)
    )
    m = dataclasses.replace(m, policies=(broken, m.policies[1]))
    result = render(m, CONFIG, PATHS)
    assert set(result.skipped) == {("ns", "bad")}
    assert result.backends == {("ns", "good"): "be_http:ns:good"}
    text = result.files["haproxy.cfg"].decode()
    assert "be_http:ns:bad" not in text and "backend be_http:ns:good" in text


@pytest.mark.parametrize("name", ['we"ird', "a b", "x\ny", "é", "%[src]", "a:b"])
def test_hostile_names_are_encoded_in_backend_names(name: str) -> None:
    m = build([f.route("r")], [f.endpoints("svc", ["10.0.0.1"])])
    policy = dataclasses.replace(m.policies[0], name=name)
    result = render(dataclasses.replace(m, policies=(policy,)), CONFIG, PATHS)
    backend = result.backends[("ns", name)]
    assert re.fullmatch(r"be_http:[a-z0-9._:-]+", backend)


def test_warm_render_equals_cold_render() -> None:
    routes = [f.route(f"r{i}", f"h{i}.example.com", path="/p" * (i % 3)) for i in range(20)]
    m = build(routes, [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])])
    cold = render_haproxy(m, CONFIG, PATHS)
    assert render_haproxy(m, CONFIG, PATHS) == cold
    other = dataclasses.replace(CONFIG, load_balance_algorithm="roundrobin")
    assert "balance roundrobin" in render_haproxy(m, other, PATHS)["haproxy.cfg"].decode()
