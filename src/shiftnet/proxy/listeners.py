"""Which sockets user-space mode listens on for a service table (pure).

Each listener is a :class:`ServiceEntry` seen from one address: its
``cluster_ip``/``port`` are where to listen and its ``backends`` where that
traffic may go. The ClusterIP listener uses ``cluster_backends``
(``internalTrafficPolicy``); a node port listens on each of the configured
node port addresses (loopback by default), each external IP and LB address on
the service port, all with ``backends`` (``externalTrafficPolicy: Cluster``).

``externalTrafficPolicy: Local`` also promises that the endpoint sees the
client's own address, which a relay cannot keep (it connects from its own
address), so user-space mode refuses it: those external listeners are not
opened and :func:`refusal` says so. The ClusterIP keeps working.
"""

from __future__ import annotations

import dataclasses

from shiftnet.proxy.model import NODE_PORT_ADDRESS, ServiceEntry, ServicePortName, ServiceTable

ListenerKey = tuple[ServicePortName, str, int]  # service port, listening address, port


def cluster_listeners(table: ServiceTable) -> dict[ServicePortName, ServiceEntry]:
    """One listener per service port on its ClusterIP, towards ``cluster_backends``."""
    return {
        key: entry
        if entry.cluster_backends == entry.backends
        else dataclasses.replace(entry, backends=entry.cluster_backends)
        for key, entry in table.entries.items()
    }


def external_listeners(
    entry: ServiceEntry, node_port_addresses: tuple[str, ...]
) -> dict[ListenerKey, ServiceEntry]:
    """The node port, external IP and LB address listeners of one service port."""
    out: dict[ListenerKey, ServiceEntry] = {}
    for ip, _, port in entry.external_vips:
        addresses = node_port_addresses if ip == NODE_PORT_ADDRESS else (ip,)
        for address in addresses:
            out[(entry.id, address, port)] = dataclasses.replace(
                entry,
                cluster_ip=address,
                port=port,
                backends=entry.external_backends,
                node_port=0,
                external_ips=(),
                load_balancer_ips=(),
            )
    return out


def refusal(entry: ServiceEntry) -> str:
    """Why a service port's external addresses are not served in user-space mode."""
    return (
        f'Service "{entry.id.namespace}/{entry.id.name}": spec.externalTrafficPolicy: '
        "Local keeps the client's source address, which user-space mode cannot do (it "
        "relays from its own address); its node port, external IPs and load-balancer "
        "addresses are not served (use --mode nftables or iptables, or the Cluster policy)"
    )
