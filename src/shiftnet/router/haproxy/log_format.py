"""HAProxy's logging lines: where the log goes, in which format, and what is captured.

Why one module: the lines the writer puts in ``global``, ``defaults`` and the
frontends, and the message format the router's own receiver
(``router/accesslog.py``) reads back, must agree field by field; both are
spelled here. Toward a syslog address (``ROUTER_SYSLOG_ADDRESS``) the lines
are OpenShift's: ``option httplog`` (or ``ROUTER_SYSLOG_FORMAT``) and
``option tcplog``. Without one, HAProxy sends a fixed, space-separated
message to the router over a UNIX datagram socket in the run directory; its
first fields are the ones the receiver needs to name the route.

Every value from the configuration passes through
:mod:`shiftnet.router.haproxy.escape`. Pure: no I/O.
"""

from __future__ import annotations

from shiftnet.router.config import DEFAULT_UNIQUE_ID_FORMAT, UNIQUE_ID_RESERVED, RouterConfig
from shiftnet.router.haproxy import escape

OWN_LOG_LENGTH = 8192  # the receiver reads whole datagrams; long request lines stay whole

# The message of one HTTP request: kind, backend, server, status, bytes sent, timings
# (TR/Tw/Tc/Tr/Ta ms), client, termination state, host (URL-encoded: no spaces),
# path (no query), then free text: unique ID, captured cookies and headers, the request line.
HTTP_FIELDS = (
    "H %b %s %ST %B %TR/%Tw/%Tc/%Tr/%Ta %ci:%cp %tsc %[var(txn.host),url_enc] %[var(txn.path)]"
)
# One TCP connection on the HTTPS port (passthrough routes): the SNI stands for the host,
# the timings are Tw/Tc/Tt, there is no status and no path.
TCP_FIELDS = "T %b %s - %B %Tw/%Tc/%Tt %ci:%cp %ts %[var(sess.sni),url_enc] -"
FIXED_FIELDS = 10  # space-separated fields before the free text, in both messages


def global_lines(config: RouterConfig, log_socket: str) -> list[str]:
    """The ``log`` line of ``global`` (none when logging is off)."""
    if config.syslog_address is not None:
        target = escape.syslog_target(config.syslog_address)
        level = config.log_level or "warning"
        return [
            f"  log {target} len {int(config.log_max_length)} {config.log_facility} {level}",
            "  log-send-hostname",
        ]
    if not config.own_access_log:
        return []
    target = escape.quoted("unix@" + log_socket, "log socket path")
    level = config.log_level or "info"
    return [f"  log {target} len {OWN_LOG_LENGTH} format raw {config.log_facility} {level}"]


def defaults_lines(config: RouterConfig) -> list[str]:
    """``log global`` and OpenShift's two logging options, in the base defaults."""
    if config.syslog_address is None and not config.own_access_log:
        return []
    lines = ["  log global"]
    if config.dont_log_null:
        lines.append("  option dontlognull")
    if config.http_ignore_probes:
        lines.append("  option http-ignore-probes")
    return lines


def _unique_id_lines(config: RouterConfig) -> list[str]:
    if config.unique_id_header_name is None:
        return []
    fmt = config.unique_id_format or DEFAULT_UNIQUE_ID_FORMAT
    header = escape.header_name(
        config.unique_id_header_name, "ROUTER_UNIQUE_ID_HEADER_NAME", UNIQUE_ID_RESERVED
    )
    return [
        f"  unique-id-format {escape.log_format_string(fmt, 'ROUTER_UNIQUE_ID_FORMAT')}",
        f"  unique-id-header {header}",
    ]


def http_frontend_lines(config: RouterConfig) -> list[str]:
    """Captures, the unique ID and the log format of a frontend that reads HTTP."""
    lines: list[str] = []
    for capture in config.capture_request_headers:
        name = escape.capture_name(capture.name, "ROUTER_CAPTURE_HTTP_REQUEST_HEADERS")
        lines.append(f"  capture request header {name} len {int(capture.max_length)}")
    for capture in config.capture_response_headers:
        name = escape.capture_name(capture.name, "ROUTER_CAPTURE_HTTP_RESPONSE_HEADERS")
        lines.append(f"  capture response header {name} len {int(capture.max_length)}")
    cookie = config.capture_cookie
    if cookie is not None:
        name = escape.capture_name(cookie.name, "ROUTER_CAPTURE_HTTP_COOKIE")
        if cookie.exact:
            name = name[:-1] + '="'  # the name is a quoted word: "=" goes inside the quotes
        lines.append(f"  capture cookie {name} len {int(cookie.max_length)}")
    lines += _unique_id_lines(config)
    if config.syslog_format is not None:
        lines.append(f"  log-format {escape.log_format_string(config.syslog_format)}")
    elif config.syslog_address is not None:
        lines.append("  option httplog")
    elif config.own_access_log:
        free = " %ID" if config.unique_id_header_name is not None else ""
        free += " %CC %CS" if config.capture_cookie is not None else ""  # request, response
        free += " %hr %hs %{+Q}r"
        lines.append(f"  log-format {escape.quoted(HTTP_FIELDS + free)}")
    return lines


def tcp_frontend_lines(config: RouterConfig) -> list[str]:
    """The log format of the HTTPS port's TCP frontend (its SNI kept for the log)."""
    if config.syslog_address is not None or (config.own_access_log and config.syslog_format):
        return ["  option tcplog"]
    if not config.own_access_log:
        return []
    return [
        "  tcp-request content set-var(sess.sni) req.ssl_sni,lower",
        f"  log-format {escape.quoted(TCP_FIELDS)}",
    ]
