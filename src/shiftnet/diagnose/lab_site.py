"""Where ``diagnose`` stands in the SDN lab: on the node that runs the lab's router.

Why: in the lab (``shiftnet lab up``) the router, its HAProxy, the cluster
DNS and the pods' addresses live in node network namespaces, and the router
keeps its files in its node's home (``machines/<node>/``), not in the state
directory the user names. The lab records in its ``lab.json`` the namespace
of every process it started and where its DNS listens; from that record
``diagnose`` runs as a client on the router's node does: inside that node's
network namespace, with the node's home as state directory (its routers,
its proxy's record), the lab's store and the lab's DNS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shiftnet.diagnose.router_view import router_dirs
from shiftnet.errors import ConfigError

LAB_DIR = "lab"  # <state dir>/lab/<prefix>/, as sdn/lab.py lays it out
LAB_RECORD = "lab.json"
MACHINES_DIR = "machines"


@dataclass(frozen=True)
class LabSite:
    prefix: str
    node: str
    netns: str  # the node's network namespace (under /var/run/netns)
    home: Path  # the node's state directory
    store: str  # the lab's store URL
    dns: str  # ADDR:PORT of the lab's cluster DNS ("" when not recorded)


def _site(record: Path) -> LabSite | None:
    """The router's node of the lab ``record`` describes (else its DNS's node)."""
    try:
        raw = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    processes = [p for p in raw.get("processes", []) if isinstance(p, dict)]
    nodes = [n for n in raw.get("nodes", []) if isinstance(n, dict)]
    for role in ("router", "dns"):
        netns = next((p.get("netns") for p in processes if p.get("role") == role), None)
        node = next((n for n in nodes if netns and n.get("netns") == netns), None)
        if node is None or not isinstance(node.get("name"), str):
            continue
        return LabSite(
            prefix=str(raw.get("prefix", record.parent.name)),
            node=node["name"],
            netns=str(netns),
            home=record.parent / MACHINES_DIR / node["name"],
            store=str(raw.get("store", "")),
            dns=str(raw.get("dns", "")),
        )
    return None


def lab_site(state_dir: Path) -> LabSite | None:
    """The lab that is up under ``state_dir`` when no router runs from ``state_dir`` itself.

    A state directory with a router of its own (``shiftnet up``, ``shiftnet
    router``) is diagnosed where it is. Several labs up at once are an error:
    which one is meant is not knowable.
    """
    if router_dirs(state_dir):
        return None
    sites = [
        site
        for record in sorted((state_dir / LAB_DIR).glob(f"*/{LAB_RECORD}"))
        if (site := _site(record)) is not None
    ]
    if len(sites) > 1:
        names = ", ".join(s.prefix for s in sites)
        raise ConfigError(
            f"state directory {state_dir} holds {len(sites)} labs that are up ({names}): "
            "run diagnose inside the router node's namespace of the one you mean, with "
            "--state-dir <lab dir>/machines/<node> (docs/cli.md, diagnose)"
        )
    return sites[0] if sites else None
