"""Nothing listens beyond loopback unless asked; the stats page hides HAProxy's version."""

from __future__ import annotations

import re

import pytest

from shiftnet.errors import ConfigError
from shiftnet.router.config import RouterConfig, listen_address, stats_address
from shiftnet.router.haproxy.render import RenderPaths, render_haproxy
from shiftnet.router.model import L7Model

EMPTY = L7Model(policies=(), pools=())
PATHS = RenderPaths(run_dir="/var/run/shiftnet", default_certificate="/etc/shiftnet/default.pem")


def binds(config: RouterConfig) -> list[str]:
    text = render_haproxy(EMPTY, config, PATHS)["haproxy.cfg"].decode()
    return re.findall(r"^  bind (\S+)", text, flags=re.M)


def network_binds(config: RouterConfig) -> list[str]:
    return [b for b in binds(config) if not b.startswith('"unix@')]


def test_default_config_binds_http_https_and_stats_to_loopback_only() -> None:
    config = RouterConfig.from_env({})
    assert config.bind_address == "127.0.0.1"
    assert network_binds(config) == ["127.0.0.1:80", "127.0.0.1:443", "127.0.0.1:1936"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.0.0.0", "0.0.0.0:8080"),
        ("*", ":8080"),
        ("::", "[::]:8080"),
        ("192.0.2.7", "192.0.2.7:8080"),
        ("fd00::7", "[fd00::7]:8080"),
    ],
)
def test_exposing_the_router_is_an_explicit_choice(value: str, expected: str) -> None:
    config = RouterConfig.from_env(
        {"ROUTER_BIND_ADDRESS": value, "ROUTER_SERVICE_HTTP_PORT": "8080", "STATS_PORT": "0"}
    )
    assert network_binds(config)[0] == expected
    assert len(network_binds(config)) == 2  # http and https, no stats listener


@pytest.mark.parametrize("value", ["", "localhost", "10.0.0.1:80", "0.0.0.0/0"])
def test_bad_bind_address_names_the_flag(value: str) -> None:
    import argparse

    from shiftnet.router.config import add_router_flags

    parser = argparse.ArgumentParser()
    add_router_flags(parser)
    ns = parser.parse_args([f"--bind-address={value}"])
    with pytest.raises(ConfigError, match=r"^--bind-address=.* is invalid: must be an IP address"):
        RouterConfig.from_args(ns, {})


def test_stats_page_hides_the_haproxy_version() -> None:
    text = render_haproxy(EMPTY, RouterConfig(), PATHS)["haproxy.cfg"].decode()
    stats = text[text.index("listen stats") :]
    assert "  stats hide-version\n" in stats


def test_addresses_shown_to_the_user() -> None:
    assert listen_address(RouterConfig(http_port=80), 80) == "127.0.0.1:80"
    assert listen_address(RouterConfig(bind_address=""), 80) == "*:80"
    assert listen_address(RouterConfig(bind_address="::"), 80) == "[::]:80"
    assert stats_address(RouterConfig(bind_address="0.0.0.0")) == "127.0.0.1:1936"
    assert stats_address(RouterConfig(bind_address="::")) == "[::1]:1936"
    assert stats_address(RouterConfig(bind_address="192.0.2.7")) == "192.0.2.7:1936"
