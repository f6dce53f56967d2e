"""Annotation parsing (invalid values ignored with a warning), durations, escaping, config."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import shiftnet.router.annotations as ann
from shiftnet.errors import ConfigError
from shiftnet.router.config import RouterConfig
from shiftnet.router.durations import format_duration_ms, parse_duration_ms
from shiftnet.router.haproxy import escape

# ------------------------------------------------------------------ annotations


def test_valid_annotations_parse_to_typed_options() -> None:
    options, warnings = ann.parse_route_options(
        {
            ann.BALANCE: "random",
            ann.DISABLE_COOKIES: "true",
            ann.TIMEOUT: "90s",
            ann.IP_WHITELIST: "192.168.1.0/24 10.0.0.1 10.0.0.1",
            ann.HSTS_HEADER: "preload; max-age=10 ;includesubdomains",
            ann.RATE_LIMIT: "true",
            ann.RATE_LIMIT_RATE_TCP: "20",
            "unrelated.example.com/x": "anything\n",
        }
    )
    assert warnings == ()
    assert options.balance == "random" and options.disable_cookies
    assert options.timeout_ms == 90_000
    assert options.ip_allowlist == ("10.0.0.1/32", "192.168.1.0/24")
    assert options.hsts_header == "max-age=10;includeSubDomains;preload"
    assert options.rate_limit == ann.RateLimit(rate_tcp=20)


@pytest.mark.parametrize("odd", ["\u00b2", "1\u00b2", "\u0663"])  # str.isdigit's digits
def test_counts_and_max_age_in_digits_no_config_writes_are_warned_not_raised(odd: str) -> None:
    options, warnings = ann.parse_route_options(
        {
            ann.POD_CONCURRENT_CONNECTIONS: odd,
            ann.HSTS_HEADER: f"max-age={odd}",
            ann.RATE_LIMIT: "true",
            ann.RATE_LIMIT_RATE_HTTP: odd,
        }
    )
    assert options.pod_concurrent_connections is None and options.rate_limit is None
    assert options.hsts_header is None
    assert len(warnings) == 3, warnings


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (ann.BALANCE, "fastest"),
        (ann.TIMEOUT, "10 parsecs"),
        (ann.HSTS_HEADER, "includeSubDomains"),
        (ann.REWRITE_TARGET, "no-slash"),
        (ann.REWRITE_TARGET, '/a"b'),
        (ann.COOKIE_NAME, "bad cookie"),
        (ann.SET_FORWARDED_HEADERS, "sometimes"),
        (ann.POD_CONCURRENT_CONNECTIONS, "-3"),
        (ann.DISABLE_COOKIES, "maybe"),
    ],
)
def test_invalid_annotation_is_ignored_with_a_warning(key: str, value: str) -> None:
    options, warnings = ann.parse_route_options({key: value})
    assert options == ann.RouteOptions()
    assert len(warnings) == 1 and key in warnings[0] and "ignored" in warnings[0]


def test_allowlist_wins_over_legacy_whitelist() -> None:
    options, _ = ann.parse_route_options({ann.IP_ALLOWLIST: "10.0.0.1", ann.IP_WHITELIST: "::1"})
    assert options.ip_allowlist == ("10.0.0.1/32",)


# ------------------------------------------------------------------ durations


def test_durations_round_trip() -> None:
    assert parse_duration_ms("1m30s") == 90_000
    assert parse_duration_ms("5000") == 5000
    assert parse_duration_ms("5", "s") == 5000
    assert parse_duration_ms("1500us") == 2
    assert parse_duration_ms("") is None and parse_duration_ms("5x") is None
    assert parse_duration_ms("999999999999h") is None
    # Only ASCII digits, as Go's time.ParseDuration: Arabic-Indic "30s", fullwidth "5s".
    assert parse_duration_ms("\u0663\u0660s") is None and parse_duration_ms("\uff15s") is None
    assert [format_duration_ms(v) for v in (30_000, 3_600_000, 1500, 90_000)] == [
        "30s",
        "1h",
        "1500ms",
        "90s",
    ]


# ------------------------------------------------------------------ escaping


@given(st.text(max_size=40))
def test_quoted_reads_back_unchanged_or_refuses(value: str) -> None:
    try:
        word = escape.quoted(value)
    except escape.UnsafeValue:
        assert any(not ch.isprintable() or ch in "\u2028\u2029" for ch in value)
        return
    assert word.startswith('"') and word.endswith('"')
    # HAProxy's reading: a backslash makes the next character literal.
    out, i, body = [], 0, word[1:-1]
    while i < len(body):
        if body[i] == "\\":
            i += 1
        else:
            assert body[i] not in '"$#', word
        out.append(body[i])
        i += 1
    assert "".join(out) == value


@given(st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_names_are_safe_and_injective(parts: list[str]) -> None:
    try:
        name = escape.name(*parts)
    except escape.UnsafeValue:
        assert not "".join(parts)
        return
    assert len(name) <= 120
    assert all(ch in "abcdefghijklmnopqrstuvwxyz0123456789.-_:" for ch in name)


def test_names_differ_for_different_parts() -> None:
    assert escape.name("a:b") != escape.name("a", "b")
    assert escape.name("a_3a") != escape.name("a:")
    long_a, long_b = escape.name("x" * 200 + "a"), escape.name("x" * 200 + "b")
    assert long_a != long_b and len(long_a) == 120


def test_map_and_address_checks() -> None:
    assert escape.map_key("h.example.com/a") == "h.example.com/a"
    for bad in ("", "a b", "#x", "a\nb", "é"):
        with pytest.raises(escape.UnsafeValue):
            escape.map_key(bad)
    assert escape.server_address("fd00::1", 80) == "[fd00::1]:80"
    bad_addresses = (
        ("10.0.0.1", 0),
        ("10.0.0.1", 70000),
        ("host", 80),
        ("10.0.0.1\n", 80),
        ("fe80::1%eth0", 80),  # ipaddress parses a zone; HAProxy cannot resolve it
    )
    for ip, port in bad_addresses:
        with pytest.raises(escape.UnsafeValue):
            escape.server_address(ip, port)
    assert escape.ip_network("10.1.2.3/8") == "10.0.0.0/8"
    assert escape.regex_literal("/a.b(c)") == "/a\\.b\\(c\\)"
    assert escape.log_format("100%") == '"100%%"'
    with pytest.raises(escape.UnsafeValue):
        escape.hostname("Upper.example.com")


def test_pem_keeps_only_well_formed_blocks() -> None:
    body = "QUJD"  # "ABC"
    block = f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    assert escape.pem(f'junk\n{block}trailer "x') == block.encode()
    for bad in ("no pem here", "-----BEGIN EVIL-----\nQUJD\n-----END EVIL-----\n"):
        with pytest.raises(escape.UnsafeValue):
            escape.pem(bad)


# ------------------------------------------------------------------ configuration


def test_config_from_env_with_flag_precedence() -> None:
    import argparse

    from shiftnet.router.config import add_router_flags

    parser = argparse.ArgumentParser()
    add_router_flags(parser)
    ns = parser.parse_args(["--http-port", "8080"])
    config = RouterConfig.from_args(
        ns,
        {
            "ROUTER_SERVICE_HTTP_PORT": "9090",
            "ROUTER_SERVICE_HTTPS_PORT": "9443",
            "ROUTER_LOAD_BALANCE_ALGORITHM": "roundrobin",
            "ROUTER_DEFAULT_SERVER_TIMEOUT": "1m",
            "RELOAD_INTERVAL": "2",
            "SHIFTNET_HOME": "/srv/sn",
        },
    )
    assert (config.http_port, config.https_port) == (8080, 9443)
    assert config.load_balance_algorithm == "roundrobin"
    assert config.server_timeout_ms == 60_000 and config.reload_interval_ms == 2000
    assert config.work_dir == "/srv/sn/router-router"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"ROUTER_SERVICE_HTTP_PORT": "http"}, "ROUTER_SERVICE_HTTP_PORT"),
        ({"ROUTER_TCP_BALANCE_SCHEME": "fastest"}, "ROUTER_TCP_BALANCE_SCHEME"),
        ({"STATS_USERNAME": "admin"}, "STATS_PASSWORD"),
        ({"STATS_PASSWORD": "a b", "STATS_USERNAME": "x"}, "STATS_PASSWORD"),
        ({"ROUTER_SERVICE_HTTPS_PORT": "80"}, "ROUTER_SERVICE_HTTPS_PORT"),
    ],
)
def test_bad_config_names_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        RouterConfig.from_env(env)
