"""Node side of the cluster: the node agent, pod processes and (later) the SDN.

``NodeAgent(store, config)`` registers a Node, waits for its HostSubnet and
runs the Pods scheduled to it. In local mode pods are plain processes that
bind their own loopback address.
"""

from shiftnet.sdn.agent import NodeAgent
from shiftnet.sdn.config import NodeConfig

__all__ = ["NodeAgent", "NodeConfig"]
