"""Access-log settings: OpenShift's variables parsed and refused at start, and the lines
the writer makes from them (checked by HAProxy itself in tests/integration)."""

from __future__ import annotations

import pytest

from shiftnet.errors import ConfigError
from shiftnet.router.config import CookieCapture, HeaderCapture, RouterConfig
from shiftnet.router.haproxy import escape, log_format
from shiftnet.router.haproxy.writer import RenderPaths, head_text

PATHS = RenderPaths(run_dir="/run/sn", default_certificate="/etc/sn/default.pem")


def config(**env: str) -> RouterConfig:
    return RouterConfig.from_env({"HOME": "/tmp", **env})


def test_openshift_forms_are_parsed() -> None:
    c = config(
        ROUTER_CAPTURE_HTTP_REQUEST_HEADERS="X-Forwarded-For:64,User-Agent:128",
        ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS="Content-Type:32",
        ROUTER_CAPTURE_HTTP_COOKIE="session=:40",
        ROUTER_UNIQUE_ID_HEADER_NAME="X-Request-Id",
        ROUTER_LOG_LEVEL="Info",
        ROUTER_LOG_FACILITY="local3",
        ROUTER_DONT_LOG_NULL="true",
        ROUTER_HTTP_IGNORE_PROBES="1",
    )
    assert c.capture_request_headers == (
        HeaderCapture("X-Forwarded-For", 64),
        HeaderCapture("User-Agent", 128),
    )
    assert c.capture_response_headers == (HeaderCapture("Content-Type", 32),)
    assert c.capture_cookie == CookieCapture("session", 40, exact=True)
    assert config(ROUTER_CAPTURE_HTTP_COOKIE="sess:8").capture_cookie == CookieCapture(
        "sess", 8, exact=False
    )
    assert (c.log_level, c.log_facility, c.dont_log_null, c.http_ignore_probes) == (
        "info",
        "local3",
        True,
        True,
    )
    assert c.own_access_log
    assert not config(ROUTER_SYSLOG_ADDRESS="127.0.0.1:514").own_access_log
    assert not config(ROUTER_ACCESS_LOG_MAX_BYTES="0").own_access_log


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ROUTER_CAPTURE_HTTP_REQUEST_HEADERS", 'X-Evil"\n  log-format x:10'),
        ("ROUTER_CAPTURE_HTTP_REQUEST_HEADERS", "X Evil:10"),
        ("ROUTER_CAPTURE_HTTP_REQUEST_HEADERS", "X-Ok"),
        ("ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS", "X-Ok:many"),
        ("ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS", "X-Ok:0"),
        ("ROUTER_CAPTURE_HTTP_COOKIE", "a;b=:10"),
        ("ROUTER_CAPTURE_HTTP_COOKIE", "a:b:10"),
        ("ROUTER_UNIQUE_ID_HEADER_NAME", "X-Id\r\nX-Injected: 1"),
        ("ROUTER_UNIQUE_ID_HEADER_NAME", "Host"),
        ("ROUTER_UNIQUE_ID_HEADER_NAME", "Content-Length"),
        ("ROUTER_UNIQUE_ID_FORMAT", "%ci\n  stats socket /tmp/x"),
        ("ROUTER_SYSLOG_FORMAT", "%ci %zz"),
        ("ROUTER_SYSLOG_FORMAT", '%ci" bind :81'),
        ("ROUTER_SYSLOG_FORMAT", "%[env(HOME)"),
        ("ROUTER_SYSLOG_ADDRESS", "syslog.example.com"),
        ("ROUTER_SYSLOG_ADDRESS", "10.0.0.1:99999"),
        ("ROUTER_SYSLOG_ADDRESS", "unix@relative.sock"),
        ("ROUTER_SYSLOG_ADDRESS", "/dev/log extra"),
        ("ROUTER_LOG_LEVEL", "verbose"),
        ("ROUTER_LOG_FACILITY", "local9"),
        ("ROUTER_LOG_MAX_LENGTH", "10"),
        ("ROUTER_DONT_LOG_NULL", "yes please"),
        ("ROUTER_ACCESS_LOG_MAX_BYTES", "-1"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        config(**{variable: value})
    message = str(err.value)
    assert message.startswith(f"{variable}=") and "\n" not in message.replace("\\n", "")


def test_unique_id_format_needs_the_header_name() -> None:
    with pytest.raises(ConfigError, match="ROUTER_UNIQUE_ID_HEADER_NAME"):
        config(ROUTER_UNIQUE_ID_FORMAT="%ci")


def test_log_format_strings_accepted_as_openshift_writes_them() -> None:
    # The ingress operator's default unique ID, with escaped spaces and quotes.
    assert escape.log_format_string(r'"%{+X}o\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid"') == (
        '"%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid"'
    )
    word = escape.log_format_string("%ci:%cp [%tr] %ft %b/%s %ST %B %[var(txn.host),lower] 100%%")
    assert word.startswith('"') and word.endswith('"')
    assert escape.log_format_string("cost $5 #1") == '"cost \\$5 \\#1"'


def test_own_receiver_lines() -> None:
    text = head_text(config(ROUTER_CAPTURE_HTTP_COOKIE="s:9"), PATHS, None)
    assert '  log "unix@/run/sn/log.sock" len 8192 format raw local1 info\n' in text
    assert "  log global\n" in text
    assert text.count('  capture cookie "s" len 9\n') == 2  # public and fe_sni
    assert text.count(f'  log-format "{log_format.HTTP_FIELDS} %CC %CS %hr %hs %{{+Q}}r"') == 2
    assert f'  log-format "{log_format.TCP_FIELDS}"' in text
    # The SNI is kept before the rule that ends the TCP rules.
    assert text.index("set-var(sess.sni)") < text.index("content accept if")


def test_syslog_address_lines_are_openshifts() -> None:
    text = head_text(config(ROUTER_SYSLOG_ADDRESS="udp@10.1.2.3:514"), PATHS, None)
    assert '  log "udp@10.1.2.3:514" len 1024 local1 warning\n  log-send-hostname\n' in text
    assert text.count("  option httplog\n") == 2 and text.count("  option tcplog\n") == 1
    assert "log.sock" not in text and "log-format" not in text
    custom = head_text(
        config(ROUTER_SYSLOG_ADDRESS="/dev/log", ROUTER_SYSLOG_FORMAT="%ci %ST %[var(txn.host)]"),
        PATHS,
        None,
    )
    assert custom.count('  log-format "%ci %ST %[var(txn.host)]"\n') == 2
    assert "option httplog" not in custom


def test_no_logging_lines_when_the_access_log_is_off() -> None:
    text = head_text(config(ROUTER_ACCESS_LOG_MAX_BYTES="0"), PATHS, None)
    assert "  log " not in text and "log-format" not in text and "log.sock" not in text
