"""The DNS server's settings, with the flag and environment names users set."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shiftnet.api.names import is_digits
from shiftnet.dns.names import is_dns1123_subdomain
from shiftnet.dns.podrecords import POD_MODES
from shiftnet.dns.upstream import parse_upstream
from shiftnet.errors import ConfigError

# OpenShift 3 ran its node/master DNS on 8053; a loopback address keeps local
# mode unprivileged and off the network.
DEFAULT_LISTEN = "127.0.0.1:8053"
DEFAULT_DOMAIN = "cluster.local"
DEFAULT_TTL = 5
# RFC 7766 6.2.3: idle TCP clients are closed after a timeout "of the order of
# seconds", and at the connection limit the longest idle one makes room.
DEFAULT_TCP_IDLE_TIMEOUT = 10.0
DEFAULT_CHASE_TIMEOUT = 2.0
DEFAULT_MAX_TCP_CONNECTIONS = 256
MAX_TCP_IDLE_TIMEOUT = 3600.0
# The Corefile Kubernetes installs (kubeadm, the cluster add-on) says ``pods
# insecure``; the CoreDNS plugin alone would say ``disabled``.
DEFAULT_POD_MODE = "insecure"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
# The answers a two-way setting chooses between; the first is CoreDNS's, the default.
NXDOMAIN_OR_NODATA = ("nxdomain", "nodata")
NODATA_OR_CNAME = ("nodata", "cname")
NODATA_OR_RRSETS = ("nodata", "rrsets")


def _choice(
    given: str | None, env: Mapping[str, str], variable: str, values: tuple[str, str]
) -> str:
    """The flag's word, else the environment's, else the first of ``values``; checked."""
    text = (given if given is not None else env.get(variable, "")).strip().lower() or values[0]
    if text not in values:
        flag = "--" + variable.removeprefix("SHIFTNET_DNS_").lower().replace("_", "-")
        raise ConfigError(
            f"{flag} {text!r} must be {values[0]} or {values[1]} (environment {variable})"
        )
    return text


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[v6]:PORT`` for IPv6) as (address, port); port 0 picks a free one."""
    value = text.strip()
    if value.startswith("["):
        host, sep, port_text = value[1:].partition("]:")
    else:
        host, sep, port_text = value.rpartition(":")
    if not sep or not is_digits(port_text) or int(port_text) > 65535:
        raise ConfigError(
            f"listen address {text!r} must look like ADDR:PORT, e.g. {DEFAULT_LISTEN}"
        )
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(f"listen address {text!r} does not start with an IP address") from None
    return host, int(port_text)


@dataclass(frozen=True)
class DNSConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 8053
    domain: str = DEFAULT_DOMAIN
    ttl: int = DEFAULT_TTL
    upstreams: tuple[tuple[str, int], ...] = ()
    headless_empty_nxdomain: bool = True  # CoreDNS; the spec says NODATA
    pod_mode: str = DEFAULT_POD_MODE  # pod records: disabled | insecure | verified
    wildcards: bool = False  # kube-dns's "*" labels (CoreDNS removed them in 1.9)
    empty_non_terminal_nxdomain: bool = True  # CoreDNS; RFC 8020 says NODATA
    externalname_other_cname: bool = False  # CoreDNS: NODATA; RFC 1034: the CNAME
    any_rrsets: bool = False  # CoreDNS: ANY gets no records; else every RRset at the name
    dns_version_other_nxdomain: bool = True  # CoreDNS; the name exists, so RFCs say NODATA
    chase_timeout: float = DEFAULT_CHASE_TIMEOUT  # at most this long for an ExternalName's target
    max_udp_size: int = 1232  # the EDNS buffer we offer (DNS flag day 2020)
    upstream_timeout: float = 2.0
    tcp_idle_timeout: float = DEFAULT_TCP_IDLE_TIMEOUT
    max_tcp_connections: int = DEFAULT_MAX_TCP_CONNECTIONS
    max_forwards_in_flight: int = 1024
    sync_interval: float = 0.1  # least time between two zone rebuilds

    def __post_init__(self) -> None:
        if not is_dns1123_subdomain(self.domain.strip(".").lower()):
            raise ConfigError(f"cluster domain {self.domain!r} is not a DNS-1123 subdomain")
        if not 0 <= self.ttl <= 2**31 - 1:
            raise ConfigError(f"ttl {self.ttl} must be between 0 and 2147483647 seconds")
        if not 512 <= self.max_udp_size <= 65535:
            raise ConfigError(f"max UDP size {self.max_udp_size} must be between 512 and 65535")
        if not 0 < self.tcp_idle_timeout <= MAX_TCP_IDLE_TIMEOUT:
            raise ConfigError(
                f"TCP idle timeout {self.tcp_idle_timeout:g} must be more than 0 and at most "
                f"{MAX_TCP_IDLE_TIMEOUT:g} seconds"
            )
        if self.pod_mode not in POD_MODES:
            raise ConfigError(
                f"pod records mode {self.pod_mode!r} must be one of {', '.join(POD_MODES)}"
            )
        if not 0 < self.chase_timeout <= 60:
            raise ConfigError(
                f"ExternalName chase timeout {self.chase_timeout:g} must be more than 0 and at "
                "most 60 seconds"
            )
        if not 1 <= self.max_tcp_connections <= 65535:
            raise ConfigError(
                f"max TCP connections {self.max_tcp_connections} must be between 1 and 65535"
            )

    @property
    def zone_domain(self) -> str:
        return self.domain.strip(".").lower()

    @classmethod
    def build(
        cls,
        *,
        listen: str | None = None,
        domain: str | None = None,
        ttl: int | None = None,
        upstreams: Sequence[str] = (),
        headless_empty: str | None = None,
        empty_non_terminal: str | None = None,
        externalname_other: str | None = None,
        any_query: str | None = None,
        dns_version_other: str | None = None,
        tcp_idle_timeout: float | None = None,
        max_tcp_connections: int | None = None,
        chase_timeout: float | None = None,
        pod_mode: str | None = None,
        wildcards: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> DNSConfig:
        """Flags win over ``SHIFTNET_DNS_*`` environment variables, which win over defaults."""
        env = os.environ if env is None else env
        host, port = parse_listen(listen or env.get("SHIFTNET_DNS_LISTEN") or DEFAULT_LISTEN)
        if ttl is None and env.get("SHIFTNET_DNS_TTL"):
            text = env["SHIFTNET_DNS_TTL"]
            if not is_digits(text):
                raise ConfigError(f"SHIFTNET_DNS_TTL {text!r} is not a number of seconds")
            ttl = int(text)
        if tcp_idle_timeout is None and env.get("SHIFTNET_DNS_TCP_IDLE_TIMEOUT"):
            text = env["SHIFTNET_DNS_TCP_IDLE_TIMEOUT"]
            try:
                tcp_idle_timeout = float(text)
            except ValueError:
                raise ConfigError(
                    f"SHIFTNET_DNS_TCP_IDLE_TIMEOUT {text!r} is not a number of seconds"
                ) from None
        if chase_timeout is None and env.get("SHIFTNET_DNS_CHASE_TIMEOUT"):
            text = env["SHIFTNET_DNS_CHASE_TIMEOUT"]
            try:
                chase_timeout = float(text)
            except ValueError:
                raise ConfigError(
                    f"SHIFTNET_DNS_CHASE_TIMEOUT {text!r} is not a number of seconds"
                ) from None
        if max_tcp_connections is None and env.get("SHIFTNET_DNS_MAX_TCP_CONNECTIONS"):
            text = env["SHIFTNET_DNS_MAX_TCP_CONNECTIONS"]
            if not is_digits(text):
                raise ConfigError(f"SHIFTNET_DNS_MAX_TCP_CONNECTIONS {text!r} is not a number")
            max_tcp_connections = int(text)
        if wildcards is None:
            text = env.get("SHIFTNET_DNS_WILDCARDS", "").strip().lower()
            if text not in _TRUE + _FALSE:
                raise ConfigError(f"SHIFTNET_DNS_WILDCARDS {text!r} is not true or false")
            wildcards = text in _TRUE
        headless = _choice(headless_empty, env, "SHIFTNET_DNS_HEADLESS_EMPTY", NXDOMAIN_OR_NODATA)
        ent = _choice(
            empty_non_terminal, env, "SHIFTNET_DNS_EMPTY_NON_TERMINAL", NXDOMAIN_OR_NODATA
        )
        alias = _choice(externalname_other, env, "SHIFTNET_DNS_EXTERNALNAME_OTHER", NODATA_OR_CNAME)
        any_answer = _choice(any_query, env, "SHIFTNET_DNS_ANY_QUERY", NODATA_OR_RRSETS)
        version = _choice(
            dns_version_other, env, "SHIFTNET_DNS_DNS_VERSION_OTHER", NXDOMAIN_OR_NODATA
        )
        if not upstreams and env.get("SHIFTNET_DNS_UPSTREAM"):
            upstreams = [u for u in env["SHIFTNET_DNS_UPSTREAM"].replace(",", " ").split() if u]
        return cls(
            listen_host=host,
            listen_port=port,
            domain=domain or env.get("SHIFTNET_DNS_DOMAIN") or DEFAULT_DOMAIN,
            ttl=DEFAULT_TTL if ttl is None else ttl,
            upstreams=tuple(parse_upstream(u) for u in upstreams),
            headless_empty_nxdomain=headless == "nxdomain",
            empty_non_terminal_nxdomain=ent == "nxdomain",
            externalname_other_cname=alias == "cname",
            any_rrsets=any_answer == "rrsets",
            dns_version_other_nxdomain=version == "nxdomain",
            pod_mode=pod_mode or env.get("SHIFTNET_DNS_PODS") or DEFAULT_POD_MODE,
            wildcards=wildcards,
            tcp_idle_timeout=(
                DEFAULT_TCP_IDLE_TIMEOUT if tcp_idle_timeout is None else tcp_idle_timeout
            ),
            max_tcp_connections=(
                DEFAULT_MAX_TCP_CONNECTIONS if max_tcp_connections is None else max_tcp_connections
            ),
            chase_timeout=DEFAULT_CHASE_TIMEOUT if chase_timeout is None else chase_timeout,
        )
