"""Settings from flags and environment, and the resolver setup pods get."""

from __future__ import annotations

import pytest

from shiftnet.dns.config import DNSConfig, parse_listen
from shiftnet.dns.resolvconf import render_resolv_conf, search_path
from shiftnet.errors import ConfigError


def test_defaults() -> None:
    cfg = DNSConfig.build(env={})
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 8053)
    assert cfg.zone_domain == "cluster.local" and cfg.ttl == 5 and cfg.upstreams == ()


def test_environment_then_flags() -> None:
    env = {
        "SHIFTNET_DNS_LISTEN": "127.0.0.2:9053",
        "SHIFTNET_DNS_DOMAIN": "corp.example",
        "SHIFTNET_DNS_TTL": "30",
        "SHIFTNET_DNS_UPSTREAM": "127.0.0.1:5353, 10.0.0.1",
    }
    cfg = DNSConfig.build(env=env)
    assert (cfg.listen_host, cfg.listen_port, cfg.zone_domain, cfg.ttl) == (
        "127.0.0.2",
        9053,
        "corp.example",
        30,
    )
    assert cfg.upstreams == (("127.0.0.1", 5353), ("10.0.0.1", 53))
    cfg = DNSConfig.build(listen="127.0.0.3:1053", ttl=0, upstreams=["127.0.0.9"], env=env)
    assert (cfg.listen_host, cfg.listen_port, cfg.ttl) == ("127.0.0.3", 1053, 0)
    assert cfg.upstreams == (("127.0.0.9", 53),)


@pytest.mark.parametrize("text", ["8053", "localhost:8053", "127.0.0.1:", "127.0.0.1:70000", ":53"])
def test_bad_listen(text: str) -> None:
    with pytest.raises(ConfigError, match="listen address"):
        parse_listen(text)


def test_ipv6_listen() -> None:
    assert parse_listen("[::1]:8053") == ("::1", 8053)


@pytest.mark.parametrize(
    ("kw", "field"),
    [({"domain": "bad_domain"}, "domain"), ({"ttl": -1}, "ttl"), ({"max_udp_size": 100}, "UDP")],
)
def test_bad_config(kw: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        DNSConfig(**kw)  # type: ignore[arg-type]


def test_bad_ttl_env() -> None:
    with pytest.raises(ConfigError, match="SHIFTNET_DNS_TTL"):
        DNSConfig.build(env={"SHIFTNET_DNS_TTL": "five"})


def test_search_path() -> None:
    assert search_path("shop") == ["shop.svc.cluster.local", "svc.cluster.local", "cluster.local"]
    assert search_path("shop", "Corp.Example.") == [
        "shop.svc.corp.example",
        "svc.corp.example",
        "corp.example",
    ]
    with pytest.raises(ValueError):
        search_path("Bad_NS")


def test_resolv_conf_on_port_53() -> None:
    assert render_resolv_conf("shop", [("172.30.0.10", 53)]) == (
        "search shop.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 172.30.0.10\n"
        "options ndots:5\n"
    )


def test_resolv_conf_names_a_non_standard_port_in_a_comment() -> None:
    text = render_resolv_conf("shop", [("127.0.0.1", 8053)])
    assert "nameserver 127.0.0.1\n" in text
    assert "# cluster DNS listens on port 8053" in text


def test_metrics_collector_reads_the_server_counters() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from shiftnet.dns.metrics import DNSCollector
    from shiftnet.dns.traffic import Traffic
    from shiftnet.dns.zone import ZoneConfig, build_zone

    class FakeServer:  # only the attributes the collector reads
        stats = {
            "udp_queries": 7,
            "tcp_queries": 2,
            "fast_answers": 5,
            "forwarded": 1,
            "chased": 6,
            "dropped": 0,
            "internal_errors": 0,
            "zone_builds": 3,
            "pod_updates": 8,
            "tcp_evicted": 4,
            "tcp_refused": 0,
        }
        zone = build_zone([], [], ZoneConfig())
        address = ("127.0.0.1", 5353)
        traffic = Traffic()
        upstreams = None

        def count_traffic(self) -> Traffic:
            return self.traffic

    registry = CollectorRegistry()
    registry.register(DNSCollector(FakeServer()))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert 'shiftnet_dns_queries_total{transport="udp"} 7.0' in text
    assert "shiftnet_dns_zone_builds_total 3.0" in text
    assert "shiftnet_dns_pod_updates_total 8.0" in text
    assert "shiftnet_dns_tcp_evicted_total 4.0" in text
    assert "shiftnet_dns_chased_total 6.0" in text
    assert "shiftnet_dns_zone_records 3.0" in text


def test_tcp_settings_from_environment_then_flags() -> None:
    env = {"SHIFTNET_DNS_TCP_IDLE_TIMEOUT": "2.5", "SHIFTNET_DNS_MAX_TCP_CONNECTIONS": "64"}
    cfg = DNSConfig.build(env={})
    assert (cfg.tcp_idle_timeout, cfg.max_tcp_connections) == (10.0, 256)
    cfg = DNSConfig.build(env=env)
    assert (cfg.tcp_idle_timeout, cfg.max_tcp_connections) == (2.5, 64)
    cfg = DNSConfig.build(tcp_idle_timeout=1, max_tcp_connections=8, env=env)
    assert (cfg.tcp_idle_timeout, cfg.max_tcp_connections) == (1.0, 8)


def test_chase_timeout_from_environment_then_flag() -> None:
    assert DNSConfig.build(env={}).chase_timeout == 2.0
    env = {"SHIFTNET_DNS_CHASE_TIMEOUT": "0.5"}
    assert DNSConfig.build(env=env).chase_timeout == 0.5
    assert DNSConfig.build(chase_timeout=5, env=env).chase_timeout == 5.0
    with pytest.raises(ConfigError, match="SHIFTNET_DNS_CHASE_TIMEOUT 'soon' is not a number"):
        DNSConfig.build(env={"SHIFTNET_DNS_CHASE_TIMEOUT": "soon"})
    with pytest.raises(ConfigError, match="ExternalName chase timeout 0 must be more than 0"):
        DNSConfig.build(env={"SHIFTNET_DNS_CHASE_TIMEOUT": "0"})


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"tcp_idle_timeout": 0}, "TCP idle timeout 0 must be more than 0"),
        ({"tcp_idle_timeout": 7200}, "TCP idle timeout 7200"),
        ({"max_tcp_connections": 0}, "max TCP connections 0"),
        ({"max_tcp_connections": 70000}, "max TCP connections 70000"),
    ],
)
def test_bad_tcp_settings(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DNSConfig(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SHIFTNET_DNS_TCP_IDLE_TIMEOUT": "soon"}, "SHIFTNET_DNS_TCP_IDLE_TIMEOUT 'soon'"),
        ({"SHIFTNET_DNS_MAX_TCP_CONNECTIONS": "many"}, "SHIFTNET_DNS_MAX_TCP_CONNECTIONS 'many'"),
    ],
)
def test_bad_tcp_environment(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DNSConfig.build(env=env)


def test_coredns_answers_are_the_defaults_and_each_alternative_is_a_setting() -> None:
    cfg = DNSConfig.build(env={})
    assert cfg.headless_empty_nxdomain and cfg.empty_non_terminal_nxdomain
    assert not cfg.externalname_other_cname
    assert not cfg.any_rrsets and cfg.dns_version_other_nxdomain
    env = {
        "SHIFTNET_DNS_HEADLESS_EMPTY": "nodata",
        "SHIFTNET_DNS_EMPTY_NON_TERMINAL": "NODATA",
        "SHIFTNET_DNS_EXTERNALNAME_OTHER": "cname",
        "SHIFTNET_DNS_ANY_QUERY": "rrsets",
        "SHIFTNET_DNS_DNS_VERSION_OTHER": "nodata",
    }
    cfg = DNSConfig.build(env=env)
    assert not cfg.headless_empty_nxdomain and not cfg.empty_non_terminal_nxdomain
    assert cfg.externalname_other_cname
    assert cfg.any_rrsets and not cfg.dns_version_other_nxdomain
    cfg = DNSConfig.build(
        headless_empty="nxdomain",
        empty_non_terminal="nxdomain",
        externalname_other="nodata",
        any_query="nodata",
        dns_version_other="nxdomain",
        env=env,
    )
    assert cfg.headless_empty_nxdomain and cfg.empty_non_terminal_nxdomain
    assert not cfg.externalname_other_cname
    assert not cfg.any_rrsets and cfg.dns_version_other_nxdomain


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SHIFTNET_DNS_HEADLESS_EMPTY": "empty"}, "--headless-empty 'empty' must be nxdomain or"),
        ({"SHIFTNET_DNS_EMPTY_NON_TERMINAL": "x"}, "--empty-non-terminal 'x' must be nxdomain or"),
        (
            {"SHIFTNET_DNS_EXTERNALNAME_OTHER": "srv"},
            "--externalname-other 'srv' must be nodata or",
        ),
        ({"SHIFTNET_DNS_ANY_QUERY": "all"}, "--any-query 'all' must be nodata or rrsets"),
        (
            {"SHIFTNET_DNS_DNS_VERSION_OTHER": "x"},
            "--dns-version-other 'x' must be nxdomain or nodata",
        ),
    ],
)
def test_bad_answer_choices(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DNSConfig.build(env=env)
