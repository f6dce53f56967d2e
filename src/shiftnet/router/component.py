"""The router as a ``shiftnet up`` component (``name``, ``start``, ``stop``, ``summary``).

Configuration comes from the OpenShift router environment variables (and
``cluster.config.extra["router"]``, a mapping of the same names, when the
``up`` command passes flags); the work directory defaults to
``<state dir>/router-<name>``. ``stop()`` is a clean shutdown, so HAProxy
stops with the cluster.
"""

from __future__ import annotations

import os
from typing import Any

from shiftnet.router.config import RouterConfig, listen_address, stats_address
from shiftnet.router.stats_auth import stats_line


class RouterComponent:
    name = "router"

    def __init__(self, cluster: Any) -> None:
        from shiftnet.router.router import Router

        env = dict(os.environ)
        env["SHIFTNET_HOME"] = str(cluster.config.state_dir)
        env.update({k: str(v) for k, v in (cluster.config.extra.get("router") or {}).items()})
        self.config = RouterConfig.from_env(env)
        if not self.config.canonical_hostname and _loopback(self.config.bind_address):
            # As a kind cluster's ingress controller: a router reachable on loopback only
            # is "localhost" in Route and Ingress status, unless the user names it.
            env["ROUTER_CANONICAL_HOSTNAME"] = "localhost"
            self.config = RouterConfig.from_env(env)
        self.router = Router(cluster.require_store(), self.config)

    async def start(self) -> None:
        await self.router.start()

    async def stop(self) -> None:
        await self.router.stop()

    def metrics_collectors(self) -> list[Any]:
        """template_router_* and OpenShift's haproxy_* (read on this event loop)."""
        import asyncio

        from shiftnet.router.metrics import REGISTRY, HAProxyCollector

        return [REGISTRY, HAProxyCollector(self.router, asyncio.get_running_loop())]

    def summary(self) -> str:
        config = self.config
        return (
            f"routes on http {listen_address(config, config.http_port)}, "
            f"https {listen_address(config, config.https_port)}"
            f" (HAProxy files in {config.work_dir})"
        )

    def hints(self) -> list[str]:
        """The stats page and its credentials (the password only when just generated), and
        how to read the access log."""
        line = stats_line(self.router.stats_credentials, f"http://{stats_address(self.config)}/")
        lines = [line] if line else []
        if self.config.own_access_log:
            lines.append(
                "shiftnet logs router -f    # each request: route, server, status, timings"
            )
        return lines


def _loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1", "localhost")
