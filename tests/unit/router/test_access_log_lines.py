"""The access log's lines: routes named from the description, odd bytes made visible."""

from __future__ import annotations

import datetime

from shiftnet.router.access_routes import RouteNames
from shiftnet.router.accesslog import format_line
from shiftnet.router.model import Rule

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.UTC)
NAMES = RouteNames.build(
    served={
        ("shop", "web"): "be_http:shop:api",
        ("shop", "api"): "be_http:shop:api",  # shares api's backend
        ("shop", "api-v2"): "be_http:shop:api",
        ("shop", "wild"): "be_http:shop:wild",
        ("shop", "new"): "be_http:shop:new",
    },
    aliases={"be_http:shop:new": "be_spare_http:3"},
    rules={
        ("shop", "web"): Rule("web.example.com", "", False),
        ("shop", "api"): Rule("api.example.com", "/v1", False),
        ("shop", "api-v2"): Rule("api.example.com", "/v1/v2/", False),
        ("shop", "wild"): Rule("x.apps.example.com", "", True),
        ("shop", "new"): Rule("new.example.com", "", False),
    },
)


def http(backend: str, host: str, path: str) -> bytes:
    return (
        f"H {backend} s1 200 512 0/0/1/2/3 127.0.0.1:40000 ---- {host} {path}"
        f' {{ua}} "GET {path} HTTP/1.1"\n'
    ).encode()


def test_shared_backend_routes_told_apart_by_host_and_longest_path() -> None:
    assert NAMES.route("be_http:shop:api", "web.example.com", "/") == "shop:web"
    assert NAMES.route("be_http:shop:api", "api.example.com", "/v1/x") == "shop:api"
    assert NAMES.route("be_http:shop:api", "api.example.com", "/v1/v2/x") == "shop:api-v2"
    assert NAMES.route("be_http:shop:api", "api.example.com", "/v1x") == "-"  # none matches
    assert NAMES.route("be_http:shop:wild", "a.apps.example.com", "/") == "shop:wild"
    assert NAMES.route("be_spare_http:3", "new.example.com", "/") == "shop:new"  # via its spare
    assert NAMES.route("openshift_default", "x", "/") == "-"


def test_http_line_names_route_backend_server_status_timings_bytes() -> None:
    line = format_line(http("be_http:shop:api", "api.example.com", "/v1/v2/z"), NAMES, NOW)
    assert line == (
        "2026-01-02T03:04:05.678Z route=shop:api-v2 backend=be_http:shop:api server=s1"
        " status=200 bytes=512 timings=0/0/1/2/3 client=127.0.0.1:40000 termination=----"
        ' host=api.example.com {ua} "GET /v1/v2/z HTTP/1.1"\n'
    )


def test_url_encoded_host_is_matched_decoded_and_written_encoded() -> None:
    line = format_line(http("be_http:shop:api", "WEB.example.com%20x", "/"), NAMES, NOW)
    assert line is not None and "host=WEB.example.com%20x" in line


def test_tls_hop_is_left_out_and_passthrough_named_by_sni() -> None:
    hop = b"T be_sni fe_sni - 900 0/0/5 127.0.0.1:1 ---- web.example.com -\n"
    assert format_line(hop, NAMES, NOW) is None
    tcp = b"T be_http:shop:wild s0 - 900 0/0/5 127.0.0.1:1 -- b.apps.example.com -\n"
    line = format_line(tcp, NAMES, NOW)
    assert line is not None and " route=shop:wild " in line and " status=- " in line


def test_control_bytes_never_reach_the_file() -> None:
    odd = b'H be_http:shop:api s1 200 1 0/0/0/0/0 1.2.3.4:5 ---- h / "GET /\x1b[2J\x00 HTTP/1.1"\n'
    line = format_line(odd, NAMES, NOW)
    assert line is not None and line.count("\n") == 1 and "\\x1b[2J\\x00" in line
    custom = format_line(b"my own\x07format\n", NAMES, NOW, own_format=False)
    assert custom == "2026-01-02T03:04:05.678Z my own\\x07format\n"


def test_haproxy_notices_left_out_of_the_own_format() -> None:
    notice = b"Proxy be_spare_http:3 stopped (cumulated conns: FE: 0, BE: 0).\n"
    assert format_line(notice, NAMES, NOW) is None
    assert format_line(notice, NAMES, NOW, own_format=False) is not None
