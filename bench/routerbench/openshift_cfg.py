"""An OpenShift 3.x-style HAProxy configuration for the benchmark's routes (the baseline).

Written from the behaviour of OpenShift's ``haproxy-config.template`` and its
map helpers, not copied: every route becomes one regular expression over
HAProxy's ``base`` fetch (Host header + path), ``^<host>(:[0-9]+)?<path>(/.*)?$``
with the host and path regex-quoted; the lines of ``os_http_be.map`` are sorted
in reverse lexicographic order (wildcard patterns, which start with
``^[^\\.]*``, would go last) so that a longer path of the same host comes first;
and the frontend picks the backend with ``use_backend %[base,map_reg(...)]``,
which HAProxy answers by trying the patterns one after another. One backend
per route, OpenShift's default options (leastconn, sticky cookie, forwarded
headers), one ``server`` line per endpoint with weight 256, and health checks
only when a backend has more than one endpoint, as the template does.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from routerbench.workload import NAMESPACE, BenchRoute

HTTP_MAP = "os_http_be.map"
REDIRECT_MAP = "os_route_http_redirect.map"
WILDCARD_PREFIX = "^[^\\.]*"

_RE_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


def quote_meta(text: str) -> str:
    """Go's ``regexp.QuoteMeta``: backslash before every regex metacharacter."""
    return _RE_SPECIAL.sub(r"\\\1", text)


def route_regexp(host: str, path: str) -> str:
    """The map key OpenShift 3.x writes for a non-wildcard route."""
    stripped = path.rstrip("/")
    if not stripped:
        path_re, sub_re = "", "(/.*)?"
    elif path.endswith("/"):
        path_re, sub_re = quote_meta(path), "(.*)?"
    else:
        path_re, sub_re = quote_meta(path), "(/.*)?"
    return "^" + quote_meta(host) + "(:[0-9]+)?" + path_re + sub_re + "$"


def sort_map_lines(lines: list[str], prefix: str = WILDCARD_PREFIX) -> list[str]:
    """Reverse lexicographic order, lines starting with ``prefix`` (wildcards) last."""
    plain = sorted((ln for ln in lines if not ln.startswith(prefix)), reverse=True)
    wild = sorted((ln for ln in lines if ln.startswith(prefix)), reverse=True)
    return plain + wild


def backend_name(r: BenchRoute) -> str:
    return f"be_http:{NAMESPACE}:{r.name}"


def _hash(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def render(
    rs: list[BenchRoute],
    pods: dict[str, list[str]],
    port: int,
    pod_port: int,
    maxconn: int,
    nbthread: int,
    admin_socket: str,
) -> dict[str, bytes]:
    """The file set ``{name: bytes}``; ``pods`` maps route name -> endpoint addresses."""
    head = [
        "global",
        f"  maxconn {maxconn}",
        f"  nbthread {nbthread}",
        "  hard-stop-after 30s",
        f"  stats socket {admin_socket} mode 600 level admin expose-fd listeners",
        "  stats timeout 2m",
        "",
        "defaults",
        f"  maxconn {maxconn}",
        "  timeout connect 5s",
        "  timeout client 30s",
        "  timeout client-fin 1s",
        "  timeout server 30s",
        "  timeout server-fin 1s",
        "  timeout http-request 10s",
        "  timeout http-keep-alive 300s",
        "  timeout tunnel 1h",
        "",
        "frontend public",
        f"  bind 127.0.0.1:{port}",
        "  mode http",
        "  tcp-request inspect-delay 5s",
        "  tcp-request content accept if HTTP",
        "  monitor-uri /_______internal_router_healthz",
        "  http-request del-header Proxy",
        "  http-request set-header Host %[req.hdr(Host),lower]",
        f"  acl secure_redirect base,map_reg({REDIRECT_MAP}) -m found",
        "  redirect scheme https if secure_redirect",
        f"  use_backend %[base,map_reg({HTTP_MAP})]",
        "  default_backend openshift_default",
        "",
        "backend openshift_default",
        "  mode http",
        "  option forwardfor",
        "  http-request deny deny_status 503",
        "",
    ]
    backends: list[str] = []
    map_lines: list[str] = []
    for r in rs:
        be = backend_name(r)
        map_lines.append(f"{route_regexp(r.host, r.path)} {be}")
        addrs = pods[r.name]
        lines = [
            f"backend {be}",
            "  mode http",
            "  option redispatch",
            "  option forwardfor",
            "  balance leastconn",
            "  timeout check 5000ms",
            "  http-request set-header X-Forwarded-Host %[req.hdr(host)]",
            "  http-request set-header X-Forwarded-Port %[dst_port]",
            "  http-request set-header X-Forwarded-Proto http if !{ ssl_fc }",
            "  http-request set-header X-Forwarded-Proto https if { ssl_fc }",
            "  http-request add-header Forwarded"
            " for=%[src];host=%[req.hdr(host)];proto=%[req.hdr(X-Forwarded-Proto)]",
            f"  cookie {_hash(be)} insert indirect nocache httponly",
        ]
        check = " check inter 5000ms" if len(addrs) > 1 else ""
        for ip in addrs:
            sid = f"pod:{r.name}-pod:{r.name}:{ip}:{pod_port}"
            lines.append(f"  server {sid} {ip}:{pod_port} cookie {_hash(sid)} weight 256{check}")
        backends.append("\n".join(lines) + "\n")
    cfg = "\n".join(head) + "\n" + "\n".join(backends)
    return {
        "haproxy.cfg": cfg.encode(),
        HTTP_MAP: "".join(ln + "\n" for ln in sort_map_lines(map_lines)).encode(),
        REDIRECT_MAP: b"",
    }


def write(conf_dir: Path, files: dict[str, bytes]) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (conf_dir / name).write_bytes(data)
