"""The ``shiftnet up`` step that gives this cluster its own networks and ports.

It runs after the store (it reads the stored ClusterNetwork) and before the
master, proxy, DNS and router, whose settings it fills in
``ClusterConfig``: ``cluster_network``, ``service_network``,
``extra["router"]`` (``ROUTER_SERVICE_HTTP_PORT``, ``ROUTER_SERVICE_HTTPS_PORT``,
``STATS_PORT``), ``extra["dns"]["listen"]`` and ``extra["apiserver"]["listen"]``.
Under the registry's lock it reads the other clusters' claims, probes what is
bound, applies the rules of :mod:`shiftnet.claims.picking`, and records the
result in the state directory and the registry before releasing the lock. Only local network
mode claims anything: SDN mode's addresses live in namespaces.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from shiftnet.api import ClusterNetwork
from shiftnet.api.names import is_digits
from shiftnet.claims import probe
from shiftnet.claims.picking import Decision, PortUser, Request, describe, resolve
from shiftnet.claims.registry import RECORD_NAME, locked_registry, read_record, registry_dir
from shiftnet.client import Client
from shiftnet.errors import ConfigError

ROUTER_PORT_ENV = {
    "routerHTTP": "ROUTER_SERVICE_HTTP_PORT",
    "routerHTTPS": "ROUTER_SERVICE_HTTPS_PORT",
    "routerStats": "STATS_PORT",
}
DEFAULT_DNS_HOST = "127.0.0.1"
UDP_ROLES = frozenset({"dns"})


def _port(env: str, text: str) -> int:
    value = text.strip()
    if not is_digits(value) or int(value) > 65535:
        raise ConfigError(f"{env}={text!r} is invalid: must be a port number between 0 and 65535")
    return int(value)


def given_ports(
    router_env: Mapping[str, str], dns_listen: str | None, api_listen: str | None = None
) -> dict[str, int]:
    """The ports flags or environment name (router variables, DNS and API listen addresses)."""
    from shiftnet.dns.config import parse_listen

    ports = {
        role: _port(env, router_env[env])
        for role, env in ROUTER_PORT_ENV.items()
        if router_env.get(env, "") != ""
    }
    if dns_listen:
        ports["dns"] = parse_listen(dns_listen)[1]
    if api_listen:
        ports["api"] = parse_listen(api_listen)[1]
    return ports


def port_user_for(
    state_dir: Path, hosts: Mapping[str, str], default_host: str = "0.0.0.0"
) -> PortUser:
    """Who holds a port a role would bind (``hosts``: role -> address; others
    ``default_host``), as :func:`~shiftnet.claims.picking.resolve` asks.

    A new pick is probed on every address (0.0.0.0), a given or kept port on
    the address it will be bound to; the DNS port on UDP too. A holder whose
    command line names this state directory is this cluster's own HAProxy,
    still running after a crash: the port counts as free for it.
    """
    mine = str(state_dir) + os.sep

    def port_user(role: str, port: int, new: bool) -> str | None:
        host = "0.0.0.0" if new else hosts.get(role, default_host)
        udp_too = role in UDP_ROLES
        if probe.bindable(host, port) and (not udp_too or probe.bindable(host, port, udp=True)):
            return None
        holders = probe.port_holders(port) or probe.port_holders(port, udp=True)
        if any(mine in cmd for _, cmd in holders):
            return None
        return probe.describe_holder(holders)

    return port_user


def claim(registry: Path, state_dir: Path, request: Request, port_user: PortUser) -> Decision:
    """Resolve this cluster's claims under the registry's lock and record them in its state
    directory and the registry before the lock is released. Blocking: run it in a thread."""
    with locked_registry(registry) as reg:
        kept = read_record(state_dir / RECORD_NAME)
        others = reg.others(state_dir)
        busy = probe.bound_loopback_addresses()
        decision = resolve(replace(request, kept=kept), others, busy, port_user)
        reg.save(state_dir, decision.claims)
        return decision


class ClaimsComponent:
    name = "claims"

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.decision: Decision | None = None
        self.environ = dict(os.environ)
        self.registry = registry_dir(self.environ)

    def _router_env(self) -> dict[str, str]:
        env = dict(self.environ)
        env.update({k: str(v) for k, v in (self.cluster.config.extra.get("router") or {}).items()})
        return env

    def _dns_listen(self) -> str | None:
        opts = self.cluster.config.extra.get("dns") or {}
        value = opts.get("listen") or self.environ.get("SHIFTNET_DNS_LISTEN")
        return str(value) if value else None

    def _api_listen(self) -> str | None:
        opts = self.cluster.config.extra.get("apiserver") or {}
        value = opts.get("listen") or self.environ.get("SHIFTNET_API_LISTEN")
        return str(value) if value else None

    def _api_host(self) -> str:
        from shiftnet.dns.config import parse_listen

        given = self._api_listen()
        return parse_listen(given)[0] if given else DEFAULT_DNS_HOST

    async def _stored_networks(self) -> dict[str, str]:
        from shiftnet.master.subnets import DEFAULT_NAME, effective_network

        cn = await Client(self.cluster.require_store()).try_get(ClusterNetwork, None, DEFAULT_NAME)
        if cn is None:
            return {}
        out = {}
        network = effective_network(cn)
        if network is not None:
            out["clusterNetwork"] = network[0]
        if cn.service_network:
            out["serviceNetwork"] = cn.service_network
        return out

    async def start(self) -> None:
        cfg = self.cluster.config
        if cfg.network != "local":
            return
        from shiftnet.router.config import RouterConfig

        router_env = self._router_env()
        bind = RouterConfig.from_env(router_env).bind_address or "0.0.0.0"
        dns_listen = self._dns_listen()
        dns_host = DEFAULT_DNS_HOST
        if dns_listen:
            from shiftnet.dns.config import parse_listen

            dns_host = parse_listen(dns_listen)[0]
        networks = {
            name: value
            for name, value in (
                ("clusterNetwork", cfg.cluster_network),
                ("serviceNetwork", cfg.service_network),
            )
            if value
        }
        request = Request(
            given_networks=networks,
            stored_networks=await self._stored_networks(),
            given_ports=given_ports(router_env, dns_listen, self._api_listen()),
            root=os.geteuid() == 0,
        )
        state_dir = Path(cfg.state_dir).absolute()
        hosts = {"dns": dns_host, "api": self._api_host()}
        port_user = port_user_for(state_dir, hosts, default_host=bind)

        def decide() -> Decision:
            return claim(self.registry, state_dir, request, port_user)

        self.decision = await asyncio.to_thread(decide)
        self._apply(self.decision, dns_host)

    def _apply(self, decision: Decision, dns_host: str) -> None:
        cfg = self.cluster.config
        cfg.cluster_network = decision.claims.networks["clusterNetwork"]
        cfg.service_network = decision.claims.networks["serviceNetwork"]
        router = dict(cfg.extra.get("router") or {})
        for role, env in ROUTER_PORT_ENV.items():
            router[env] = str(decision.claims.ports[role])
        cfg.extra["router"] = router
        dns = dict(cfg.extra.get("dns") or {})
        host = f"[{dns_host}]" if ":" in dns_host else dns_host
        dns["listen"] = f"{host}:{decision.claims.ports['dns']}"
        cfg.extra["dns"] = dns
        api = dict(cfg.extra.get("apiserver") or {})
        api_host = self._api_host()
        api_host = f"[{api_host}]" if ":" in api_host else api_host
        api["listen"] = f"{api_host}:{decision.claims.ports['api']}"
        cfg.extra["apiserver"] = api
        cfg.extra["reserved_ports"] = sorted(set(decision.claims.ports.values()))

    async def stop(self) -> None:
        return None  # claims outlive a stop: the next start keeps them

    def summary(self) -> str:
        if self.decision is None:
            return "nothing to claim outside local network mode"
        return f"{describe(self.decision)}; registry {self.registry}"
