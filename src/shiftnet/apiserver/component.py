"""The API server as a ``shiftnet up`` component (``shiftnet.cluster.LocalCluster``).

The listen address comes from ``ClusterConfig.extra["apiserver"]["listen"]``,
else ``SHIFTNET_API_LISTEN``, else ``127.0.0.1:6443``, as ``shiftnet apiserver``
reads it.
"""

from __future__ import annotations

from typing import Any

from shiftnet.apiserver.config import APIServerConfig
from shiftnet.apiserver.server import APIServer


class APIServerComponent:
    name = "api"

    def __init__(self, cluster: Any) -> None:
        opts: dict[str, Any] = dict(cluster.config.extra.get("apiserver") or {})
        self.config = APIServerConfig.build(cluster.config.state_dir, listen=opts.get("listen"))
        self.server = APIServer(cluster.require_store(), self.config)

    async def start(self) -> None:
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()

    def metrics_collectors(self) -> list[Any]:
        """kube-apiserver's series of this server (its own registry)."""
        return [self.server.metrics.registry]

    def summary(self) -> str:
        return f"Kubernetes API on {self.server.url}, kubeconfig {self.config.kubeconfig_path}"

    def hints(self) -> list[str]:
        return [
            f"export KUBECONFIG={self.config.kubeconfig_path}",
            "kubectl get pods,svc,routes -A",
        ]
