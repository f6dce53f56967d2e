"""Node side of the cluster: the node agent, pod processes and (later) the SDN.

``NodeAgent(store, config)`` registers a Node, waits for its HostSubnet and
runs the Pods scheduled to it. In local mode pods are plain processes that
bind their own loopback address.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NodeAgent", "NodeConfig"]


def __getattr__(name: str) -> Any:
    # Lazy, so light modules (e.g. ``sdn.workdir`` used by manifest reading)
    # do not pull in the agent and its dependencies.
    if name == "NodeAgent":
        from shiftnet.sdn.agent import NodeAgent

        return NodeAgent
    if name == "NodeConfig":
        from shiftnet.sdn.config import NodeConfig

        return NodeConfig
    raise AttributeError(name)
