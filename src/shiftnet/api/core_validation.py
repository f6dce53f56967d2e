"""Kubernetes core/v1 rules for Pod, Service, Endpoints and Node specs.

Messages follow Kubernetes' field errors. Where shiftnet differs (loopback
addresses are allowed for pods and endpoints, probe numbers must be >= 1
because shiftnet does not default zeros) ``docs/api.md`` says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from shiftnet.api import names
from shiftnet.api.core import (
    Container,
    ContainerPort,
    EndpointAddress,
    EndpointPort,
    Endpoints,
    Node,
    Pod,
    Probe,
    Service,
    ServicePort,
)
from shiftnet.api.fielderrors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    join,
    not_supported,
    required,
)
from shiftnet.api.meta_validation import label_errors

PROTOCOLS = ("SCTP", "TCP", "UDP")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
HTTP_SCHEMES = ("HTTP", "HTTPS")
NODE_ADDRESS_TYPES = ("ExternalDNS", "ExternalIP", "Hostname", "InternalDNS", "InternalIP")
MAX_AFFINITY_TIMEOUT = 86400


def _first(path: str, value: str | int, reasons: Iterable[str]) -> list[FieldError]:
    for r in reasons:
        return [invalid(path, value, r)]
    return []


def port_errors(path: str, port: int) -> list[FieldError]:
    return _first(path, port, names.port_number_errors(port))


def protocol_errors(path: str, protocol: str) -> list[FieldError]:
    return [] if protocol in PROTOCOLS else [not_supported(path, protocol, PROTOCOLS)]


def int_or_port_name_errors(path: str, value: int | str) -> list[FieldError]:
    """A port given as a number (1-65535) or an IANA service name (``http``)."""
    if isinstance(value, int):
        return port_errors(path, value)
    if not value:
        return [required(path)]
    return _first(path, value, names.port_name_errors(value))


# ---------------------------------------------------------------- Pod


def _probe_errors(probe: Probe, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    handlers = [
        (name, h)
        for name, h in (
            ("exec", probe.exec_),
            ("httpGet", probe.http_get),
            ("tcpSocket", probe.tcp_socket),
        )
        if h is not None
    ]
    if not handlers:
        out.append(required(path, "must specify a handler type"))
    for name, _ in handlers[1:]:
        out.append(forbidden(join(path, name), "may not specify more than 1 handler type"))
    if probe.exec_ is not None and not probe.exec_.command:
        out.append(required(join(path, "exec", "command")))
    if probe.http_get is not None:
        get = probe.http_get
        out += int_or_port_name_errors(join(path, "httpGet", "port"), get.port)
        if not get.path.startswith("/"):
            out.append(invalid(join(path, "httpGet", "path"), get.path, "must begin with /"))
        if get.scheme not in HTTP_SCHEMES:
            out.append(not_supported(join(path, "httpGet", "scheme"), get.scheme, HTTP_SCHEMES))
    if probe.tcp_socket is not None:
        out += int_or_port_name_errors(join(path, "tcpSocket", "port"), probe.tcp_socket.port)
    if probe.initial_delay_seconds < 0:
        out.append(
            invalid(
                join(path, "initialDelaySeconds"),
                probe.initial_delay_seconds,
                "must be greater than or equal to 0",
            )
        )
    for name, value in (
        ("periodSeconds", probe.period_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ):
        if value < 1:
            out.append(invalid(join(path, name), value, "must be greater than or equal to 1"))
    return out


def _container_port_errors(port: ContainerPort, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if port.name:
        out += _first(join(path, "name"), port.name, names.port_name_errors(port.name))
    out += port_errors(join(path, "containerPort"), port.container_port)
    if port.host_port:
        out += port_errors(join(path, "hostPort"), port.host_port)
    out += protocol_errors(join(path, "protocol"), port.protocol)
    if port.host_ip:
        out += _first(join(path, "hostIP"), port.host_ip, names.ip_errors(port.host_ip))
    return out


def _container_errors(c: Container, path: str, port_names: set[str]) -> list[FieldError]:
    out: list[FieldError] = []
    if not c.name:
        out.append(required(join(path, "name")))
    else:
        out += _first(join(path, "name"), c.name, names.dns1123_label_errors(c.name))
    for j, port in enumerate(c.ports):
        ppath = join(path, "ports", j)
        out += _container_port_errors(port, ppath)
        if port.name:
            if port.name in port_names:
                out.append(duplicate(join(ppath, "name"), port.name))
            port_names.add(port.name)
    for j, env in enumerate(c.env):
        epath = join(path, "env", j, "name")
        if not env.name:
            out.append(required(epath))
        else:
            out += _first(epath, env.name, names.env_var_name_errors(env.name))
    for name, probe in (("readinessProbe", c.readiness_probe), ("livenessProbe", c.liveness_probe)):
        if probe is not None:
            out += _probe_errors(probe, join(path, name))
    if c.liveness_probe is not None and c.liveness_probe.success_threshold != 1:
        out.append(
            invalid(
                join(path, "livenessProbe", "successThreshold"),
                c.liveness_probe.success_threshold,
                "must be 1",
            )
        )
    return out


def pod_errors(pod: Pod) -> list[FieldError]:
    spec = pod.spec
    out: list[FieldError] = []
    if not spec.containers:
        out.append(required("spec.containers"))
    seen: set[str] = set()
    port_names: set[str] = set()
    for i, c in enumerate(spec.containers):
        path = join("spec.containers", i)
        out += _container_errors(c, path, port_names)
        if c.name and c.name in seen:
            out.append(duplicate(join(path, "name"), c.name))
        seen.add(c.name)
    if spec.restart_policy not in RESTART_POLICIES:
        out.append(not_supported("spec.restartPolicy", spec.restart_policy, RESTART_POLICIES))
    if spec.termination_grace_period_seconds < 0:
        out.append(
            invalid(
                "spec.terminationGracePeriodSeconds",
                spec.termination_grace_period_seconds,
                "must be greater than or equal to 0",
            )
        )
    for name, value in (("hostname", spec.hostname), ("subdomain", spec.subdomain)):
        if value:
            out += _first(join("spec", name), value, names.dns1123_label_errors(value))
    if spec.node_name:
        out += _first(
            "spec.nodeName", spec.node_name, names.dns1123_subdomain_errors(spec.node_name)
        )
    out += label_errors(spec.node_selector, "spec.nodeSelector")
    return out


# ---------------------------------------------------------------- Service


def _service_port_errors(port: ServicePort, path: str, need_name: bool) -> list[FieldError]:
    out: list[FieldError] = []
    if not port.name:
        if need_name:
            out.append(required(join(path, "name")))
    else:
        out += _first(join(path, "name"), port.name, names.dns1123_label_errors(port.name))
    out += protocol_errors(join(path, "protocol"), port.protocol)
    out += port_errors(join(path, "port"), port.port)
    target = port.target_port
    if target is not None and target not in (0, ""):  # unset: defaults to port
        out += int_or_port_name_errors(join(path, "targetPort"), target)
    if port.node_port:
        out += port_errors(join(path, "nodePort"), port.node_port)
    return out


def _service_ports_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    out: list[FieldError] = []
    if not spec.ports and spec.type != "ExternalName" and spec.cluster_ip != "None":
        out.append(required("spec.ports"))
    need_name = len(spec.ports) > 1
    seen_names: set[str] = set()
    seen_ports: set[tuple[int, str]] = set()
    for i, port in enumerate(spec.ports):
        path = join("spec.ports", i)
        out += _service_port_errors(port, path, need_name)
        if port.name:
            if port.name in seen_names:
                out.append(duplicate(join(path, "name"), port.name))
            seen_names.add(port.name)
        key = (port.port, port.protocol)
        if key in seen_ports:
            out.append(duplicate(path, f"{port.port}/{port.protocol}"))
        seen_ports.add(key)
        if port.node_port and spec.type in ("ClusterIP", "ExternalName"):
            out.append(
                forbidden(join(path, "nodePort"), f"may not be used when `type` is '{spec.type}'")
            )
    return out


def _affinity_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    if spec.session_affinity not in SESSION_AFFINITIES:
        return [not_supported("spec.sessionAffinity", spec.session_affinity, SESSION_AFFINITIES)]
    cfg = spec.session_affinity_config
    if spec.session_affinity == "None":
        if cfg is not None and cfg.client_ip is not None:
            return [
                forbidden(
                    "spec.sessionAffinityConfig", "must not be set when sessionAffinity is None"
                )
            ]
        return []
    timeout = spec.affinity_timeout
    if not 0 < timeout <= MAX_AFFINITY_TIMEOUT:
        return [
            invalid(
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                timeout,
                f"must be greater than 0 and less than or equal to {MAX_AFFINITY_TIMEOUT}",
            )
        ]
    return []


def _cluster_ip_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    ip = spec.cluster_ip
    if not ip:
        return []
    if spec.type == "ExternalName":
        return [forbidden("spec.clusterIP", "may not be set for ExternalName services")]
    if ip == "None":
        if spec.type in ("NodePort", "LoadBalancer"):
            return [
                invalid("spec.clusterIP", ip, f"may not be set to 'None' for {spec.type} services")
            ]
        return []
    return _first("spec.clusterIP", ip, names.ip_errors(ip))


def service_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    out: list[FieldError] = []
    if spec.type not in SERVICE_TYPES:
        out.append(not_supported("spec.type", spec.type, SERVICE_TYPES))
    if spec.type == "ExternalName":
        if not spec.external_name:
            out.append(required("spec.externalName"))
        else:
            name = spec.external_name.removesuffix(".")
            out += _first("spec.externalName", name, names.dns1123_subdomain_errors(name))
    out += _cluster_ip_errors(svc)
    out += _service_ports_errors(svc)
    if spec.selector:
        out += label_errors(spec.selector, "spec.selector")
    out += _affinity_errors(svc)
    for i, ip in enumerate(spec.external_ips):
        out += _first(join("spec.externalIPs", i), ip, names.ip_errors(ip))
    return out


# ---------------------------------------------------------------- Endpoints


def _endpoint_address_errors(addr: EndpointAddress, path: str) -> list[FieldError]:
    out = _first(join(path, "ip"), addr.ip, names.ip_errors(addr.ip))
    if addr.hostname:
        out += _first(
            join(path, "hostname"), addr.hostname, names.dns1123_label_errors(addr.hostname)
        )
    if addr.node_name:
        out += _first(
            join(path, "nodeName"), addr.node_name, names.dns1123_subdomain_errors(addr.node_name)
        )
    return out


def _endpoint_port_errors(port: EndpointPort, path: str, need_name: bool) -> list[FieldError]:
    out: list[FieldError] = []
    if not port.name:
        if need_name:
            out.append(required(join(path, "name")))
    else:
        out += _first(join(path, "name"), port.name, names.dns1123_label_errors(port.name))
    out += port_errors(join(path, "port"), port.port)
    out += protocol_errors(join(path, "protocol"), port.protocol)
    return out


def endpoints_errors(ep: Endpoints) -> list[FieldError]:
    out: list[FieldError] = []
    for i, subset in enumerate(ep.subsets):
        path = join("subsets", i)
        if not subset.addresses and not subset.not_ready_addresses:
            out.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, addr in enumerate(subset.addresses):
            out += _endpoint_address_errors(addr, join(path, "addresses", j))
        for j, addr in enumerate(subset.not_ready_addresses):
            out += _endpoint_address_errors(addr, join(path, "notReadyAddresses", j))
        need_name = len(subset.ports) > 1
        seen: set[str] = set()
        for j, port in enumerate(subset.ports):
            ppath = join(path, "ports", j)
            out += _endpoint_port_errors(port, ppath, need_name)
            if port.name:
                if port.name in seen:
                    out.append(duplicate(join(ppath, "name"), port.name))
                seen.add(port.name)
    return out


# ---------------------------------------------------------------- Node


def node_errors(node: Node) -> list[FieldError]:
    out: list[FieldError] = []
    if node.spec.pod_cidr:
        out += _first("spec.podCIDR", node.spec.pod_cidr, names.cidr_errors(node.spec.pod_cidr))
    for i, a in enumerate(node.status.addresses):
        path = join("status.addresses", i)
        if a.type not in NODE_ADDRESS_TYPES:
            out.append(not_supported(join(path, "type"), a.type, NODE_ADDRESS_TYPES))
        if not a.address:
            out.append(required(join(path, "address")))
        elif a.type in ("InternalIP", "ExternalIP"):
            out += _first(join(path, "address"), a.address, names.ip_errors(a.address))
    return out
