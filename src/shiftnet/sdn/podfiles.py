"""A pod's resolv.conf and hosts on disk, and how its processes are pointed at them.

The texts come from :mod:`shiftnet.sdn.podresolver` (pure); this module reads
the node's /etc/resolv.conf, writes the pod's two files into its run
directory (removed with the pod) and returns the environment and the argv
wrapper (:mod:`shiftnet.sdn.podetc`) that put them in place for the pod's
processes and exec probes.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from shiftnet.api import Pod
from shiftnet.sdn import podetc
from shiftnet.sdn.config import NodeConfig
from shiftnet.sdn.podresolver import (
    ResolverConfig,
    parse_resolv_conf,
    pod_hostname,
    pod_resolver,
    render_hosts,
    render_resolv_conf,
    resolver_environment,
)

log = logging.getLogger(__name__)

NODE_RESOLV_CONF = Path("/etc/resolv.conf")
PODETC = Path(podetc.__file__)


def node_resolver(path: Path = NODE_RESOLV_CONF) -> ResolverConfig:
    """The node's own resolver settings (what ``dnsPolicy: Default`` gives)."""
    try:
        return parse_resolv_conf(path.read_text(errors="replace"))
    except OSError:
        return ResolverConfig()


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


class PodFiles(NamedTuple):
    """What a pod's processes are given: environment, argv wrapper, and the file texts
    (``resolv.conf``, ``hosts``) also shown to ``ip netns exec`` in sdn mode."""

    env: dict[str, str]
    wrap: Callable[[list[str]], list[str]]
    texts: dict[str, str]


def pod_files(pod: Pod, pod_ip: str, config: NodeConfig, pod_dir: Path) -> PodFiles:
    """Write the pod's resolv.conf and hosts; return them with the environment and the
    argv wrapper that put them in place."""
    namespace = pod.metadata.namespace or "default"
    cfg = pod_resolver(
        pod,
        node=node_resolver(),
        cluster_dns=config.dns_server,
        domain=config.cluster_domain,
    )
    if cfg.skipped:
        log.warning(
            "resolver settings left out pod=%s/%s left_out=%s",
            namespace,
            pod.metadata.name,
            "; ".join(cfg.skipped),
        )
    resolv_conf, hosts = pod_dir / "resolv.conf", pod_dir / "hosts"
    pod_dir.mkdir(parents=True, exist_ok=True)
    texts = {
        "resolv.conf": render_resolv_conf(cfg),
        "hosts": render_hosts(pod, [pod_ip], config.cluster_domain),
    }
    _write(resolv_conf, texts["resolv.conf"])
    _write(hosts, texts["hosts"])
    hostname, _ = pod_hostname(pod)
    env = resolver_environment(cfg, hostname)
    env["SHIFTNET_RESOLV_CONF"] = str(resolv_conf)
    if config.dns_server is not None:
        host, port = config.dns_server
        env["SHIFTNET_DNS_SERVER"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    prefix = [sys.executable, "-I", "-S", str(PODETC), str(resolv_conf), str(hosts), hostname]

    def wrap(argv: list[str]) -> list[str]:
        return [*prefix, "--", *argv]

    return PodFiles(env, wrap, texts)
