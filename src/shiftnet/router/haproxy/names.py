"""The names HAProxy's file set is made of: files, maps, sections, sockets, backend prefixes.

Why one module: the description, the writer, the planner, the driver and
the process manager all refer to these; each name is spelled once here so
none of them keeps a copy. Pure constants and name functions, no I/O.
"""

from __future__ import annotations

import functools
import hashlib

from shiftnet.router.haproxy import escape
from shiftnet.router.model import EDGE, HTTP, PASSTHROUGH, REENCRYPT, L7Policy

CONFIG_FILE = "haproxy.cfg"
ERROR_PAGE_503 = "error-page-503.http"
CRT_LIST = "crt-list.txt"
CERT_DIR = "certs"  # route certificates (certificate, key, chain), one file per route

# HTTP port lookups (routes served in clear: plain HTTP, edge/reencrypt Allow or Redirect).
HTTP_PREFIX_MAP = "os_http_prefix.map"
HTTP_WILDCARD_PREFIX_MAP = "os_http_wildcard_prefix.map"
# Lookups after TLS termination (edge and reencrypt routes), in ``fe_sni``.
TLS_PREFIX_MAP = "os_tls_prefix.map"
TLS_WILDCARD_PREFIX_MAP = "os_tls_wildcard_prefix.map"
# SNI lookups on the HTTPS port.
SNI_PASSTHROUGH_MAP = "os_sni_passthrough.map"
SNI_PASSTHROUGH_WILDCARD_MAP = "os_sni_passthrough_wildcard.map"
SNI_TERMINATE_MAP = "os_sni_terminate.map"  # exact hosts of edge/reencrypt routes

HTTP_MAPS = (HTTP_PREFIX_MAP, HTTP_WILDCARD_PREFIX_MAP)
TLS_MAPS = (TLS_PREFIX_MAP, TLS_WILDCARD_PREFIX_MAP)
ALL_MAPS = (
    *HTTP_MAPS,
    *TLS_MAPS,
    SNI_PASSTHROUGH_MAP,
    SNI_PASSTHROUGH_WILDCARD_MAP,
    SNI_TERMINATE_MAP,
)

BASE_DEFAULTS = "base"
FORWARDED_DEFAULTS = {  # set-forwarded-headers -> the named defaults section with its rules
    "append": "fwd_append",
    "replace": "fwd_replace",
    "if-none": "fwd_if-none",
}  # "never": the base section, which sets no header
DEFAULT_BACKEND = "openshift_default"
REDIRECT_BACKEND = "openshift_redirect_https"
HTTP_FRONTEND = "public"  # the HTTP port
HTTPS_FRONTEND = "public_ssl"  # the HTTPS port: passthrough by SNI, or on to fe_sni
SNI_BACKEND = "be_sni"
SNI_FRONTEND = "fe_sni"
SNI_SOCKET = "fe_sni.sock"
ADMIN_SOCKET = "admin.sock"
LOG_SOCKET = "log.sock"  # run/: HAProxy's log, received by the router (router/accesslog.py)
ALIASES_INDEX = "aliases.json"  # run/: which spare serves which route (describe route)
LISTENERS_RECORD = "listeners.json"  # run/: the addresses the two frontends bind (diagnose)
SHARD_RECORD = "shard.json"  # run/: the router's ROUTE_LABELS and NAMESPACE_LABELS (diagnose)
LOADED_RECORD = "loaded.json"  # run/: the configuration HAProxy loaded, and since (diagnose)
CONFIG_IDENTITY = "config-sha256"  # the global description: config-sha256:<digest>
PUBLIC_HEALTHZ = "/_______internal_router_healthz"
STATS_HEALTHZ = "/healthz"

BACKEND_PREFIX = {
    HTTP: "be_http",
    EDGE: "be_edge_http",
    REENCRYPT: "be_secure",
    PASSTHROUGH: "be_tcp",
}
# Spare backends, per kind, let the driver serve a new route without a reload
# (HAProxy 2.6 cannot add a backend at run time): it points the route's map
# entries at a free spare and fills the spare's slots with ``set server``.
SPARE_PREFIX = {
    HTTP: "be_spare_http",
    EDGE: "be_spare_edge",
    REENCRYPT: "be_spare_secure",
    PASSTHROUGH: "be_spare_tcp",
}
SPARE_OF_PREFIX = {BACKEND_PREFIX[t]: SPARE_PREFIX[t] for t in BACKEND_PREFIX}
_SPARE_PREFIXES = tuple(p + ":" for p in SPARE_PREFIX.values())
# Where an empty slot points: nothing listens on port 1, and the slot is disabled.
SPARE_HOST = "127.0.0.1"
SPARE_PORT = 1
SPARE_ADDRESS = f"{SPARE_HOST}:{SPARE_PORT}"


def backend_name(policy: L7Policy) -> str:
    """OpenShift's naming: ``be_http``/``be_edge_http``/``be_secure``/``be_tcp`` + ``:ns:name``."""
    return f"{BACKEND_PREFIX[policy.termination]}:{escape.name(policy.namespace, policy.name)}"


def spare_name(termination: str, index: int) -> str:
    return f"{SPARE_PREFIX[termination]}:{index}"


def is_spare(name: str) -> bool:
    return name.startswith(_SPARE_PREFIXES)


def spare_kind(backend: str) -> str | None:
    """The spare prefix that can serve route backend ``backend`` (None: not a route backend)."""
    prefix = backend.split(":", 1)[0]
    return SPARE_OF_PREFIX.get(prefix) if ":" in backend else None


def server_name(slot: int) -> str:
    """The ``server`` name of slot ``slot`` in every backend."""
    return f"s{slot}"


@functools.lru_cache(maxsize=1024)
def backend_digest(backend: str) -> str:
    """64 hex digits from the backend name: the default cookie name and the slot cookies.

    The cap is small on purpose: every Route name ever seen passes through
    here, and an entry costs about 270 bytes against 0.3 us to hash again."""
    return hashlib.sha256(backend.encode()).hexdigest()
