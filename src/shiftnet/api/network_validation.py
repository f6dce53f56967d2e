"""network.openshift.io/v1 rules: ClusterNetwork ranges and HostSubnet assignments."""

from __future__ import annotations

import ipaddress

from shiftnet.api import names
from shiftnet.api.fielderrors import FieldError, invalid, join, required
from shiftnet.api.network import ClusterNetwork, HostSubnet

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _cidr(path: str, value: str) -> tuple[Network | None, list[FieldError]]:
    reasons = names.cidr_errors(value)
    if reasons:
        return None, [invalid(path, value, reasons[0])]
    return ipaddress.ip_network(value), []


def _host_subnet_length_errors(path: str, length: int, net: Network | None) -> list[FieldError]:
    # A node subnet needs at least a gateway and one pod: 2 host bits.
    limit = net.max_prefixlen - net.prefixlen if net is not None else 128
    if not 2 <= length <= limit:
        where = f" (the host bits of {net})" if net is not None else ""
        return [invalid(path, length, f"must be between 2 and {limit}{where}")]
    return []


def cluster_network_errors(cn: ClusterNetwork) -> list[FieldError]:
    out: list[FieldError] = []
    nets: list[tuple[str, Network]] = []
    if cn.network:
        net, errs = _cidr("network", cn.network)
        out += errs
        if net is not None:
            nets.append(("network", net))
        if cn.hostsubnetlength is not None:
            out += _host_subnet_length_errors("hostsubnetlength", cn.hostsubnetlength, net)
    if not cn.network and not cn.cluster_networks:
        out.append(required("clusterNetworks"))
    for i, entry in enumerate(cn.cluster_networks):
        path = join("clusterNetworks", i)
        net, errs = _cidr(join(path, "CIDR"), entry.cidr)
        out += errs
        out += _host_subnet_length_errors(
            join(path, "hostSubnetLength"), entry.host_subnet_length, net
        )
        if net is None:
            continue
        for other_path, other in nets:
            if other_path != "network" and net.version == other.version and net.overlaps(other):
                out.append(invalid(join(path, "CIDR"), entry.cidr, f"overlaps with {other_path}"))
        nets.append((join(path, "CIDR"), net))
    if cn.service_network:
        svc, errs = _cidr("serviceNetwork", cn.service_network)
        out += errs
        for other_path, other in nets:
            if svc is not None and svc.version == other.version and svc.overlaps(other):
                out.append(
                    invalid(
                        "serviceNetwork",
                        cn.service_network,
                        f"service network overlaps with cluster network {other_path}",
                    )
                )
                break
    if cn.vxlan_port is not None:
        reasons = names.port_number_errors(cn.vxlan_port)
        out += [invalid("vxlanPort", cn.vxlan_port, r) for r in reasons]
    if cn.mtu is not None and cn.mtu < 576:
        out.append(invalid("mtu", cn.mtu, "must be at least 576"))
    return out


def host_subnet_errors(hs: HostSubnet) -> list[FieldError]:
    out: list[FieldError] = []
    if not hs.host:
        out.append(required("host"))
    elif hs.host != hs.metadata.name:
        out.append(
            invalid("host", hs.host, f'must be the same as metadata.name: "{hs.metadata.name}"')
        )
    if not hs.subnet:
        out.append(required("subnet"))
    else:
        out += _cidr("subnet", hs.subnet)[1]
    if hs.host_ip:
        out += [invalid("hostIP", hs.host_ip, r) for r in names.ip_errors(hs.host_ip)]
    for i, ip in enumerate(hs.egress_ips):
        out += [invalid(join("egressIPs", i), ip, r) for r in names.ip_errors(ip)]
    return out
