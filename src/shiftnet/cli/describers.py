"""``describe`` text for each kind, laid out as kubectl/oc print it.

Pure: each function gets the object, the related objects ``describe.py``
fetched (a Route's Endpoints, a Service's Endpoints) and the time, and returns
lines. No I/O here, so the layout is unit-testable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from shiftnet.api import (
    ClusterNetwork,
    Endpoints,
    HostSubnet,
    Ingress,
    Namespace,
    Node,
    Pod,
    Probe,
    Resource,
    Route,
    Secret,
    Service,
)
from shiftnet.api.ingress import IngressBackend
from shiftnet.api.names import is_digits
from shiftnet.cli.printing import age, or_none, parse_timestamp
from shiftnet.cli.tables import cluster_networks_column, node_status, pod_status, service_ports

Value = str | Sequence[str]


@dataclass
class Block:
    """Aligned ``Label:  value`` rows; a list value continues on lines under the value column."""

    rows: list[tuple[str, Value]] = field(default_factory=list)
    indent: int = 0

    def add(self, label: str, value: Value) -> Block:
        self.rows.append((label, value))
        return self

    def add_all(self, rows: Iterable[tuple[str, Value]]) -> Block:
        self.rows.extend(rows)
        return self

    def lines(self) -> list[str]:
        if not self.rows:
            return []
        width = max(len(label) for label, _ in self.rows) + 2  # "Label:" + at least one space
        pad = " " * self.indent
        out: list[str] = []
        for label, value in self.rows:
            values = [value] if isinstance(value, str) else list(value) or ["<none>"]
            out.append(f"{pad}{(label + ':').ljust(width)}{values[0]}".rstrip())
            out.extend(f"{pad}{' ' * width}{v}".rstrip() for v in values[1:])
        return out


def mapping_lines(m: Mapping[str, str]) -> list[str]:
    """Labels/annotations one ``k=v`` per line, sorted; ``<none>`` when empty."""
    return [f"{k}={v}" for k, v in sorted(m.items())] or ["<none>"]


def _ago(timestamp: str | None, now: dt.datetime) -> str:
    return f"{age(timestamp, now)} ago" if parse_timestamp(timestamp) else ""


def _header(obj: Resource, now: dt.datetime) -> Block:
    b = Block().add("Name", obj.name)
    if type(obj).NAMESPACED:
        b.add("Namespace", obj.namespace or "")
    created = _ago(obj.metadata.creation_timestamp, now)
    if created:
        b.add("Created", created)
    b.add("Labels", mapping_lines(obj.metadata.labels))
    b.add("Annotations", mapping_lines(obj.metadata.annotations))
    return b


# ---------------------------------------------------------------- Route


def route_ingress_lines(route: Route, now: dt.datetime) -> list[str]:
    """One line per router that reported on the route: exposed, rejected, or pending."""
    out: list[str] = []
    for ing in route.status.ingress:
        cond = next((c for c in ing.conditions if c.type == "Admitted"), None)
        host_note = f" (host {ing.host})" if ing.host and ing.host != route.spec.host else ""
        when = _ago(cond.last_transition_time, now) if cond else ""
        if cond is not None and cond.status == "True":
            out.append(
                f"  exposed on router {ing.router_name}{host_note}" + (f" {when}" if when else "")
            )
        elif cond is not None and cond.status == "False":
            reason = cond.reason or "Rejected"
            out.append(
                f"  rejected by router {ing.router_name}: {reason}" + (f" ({when})" if when else "")
            )
            if cond.message:
                out.append(f"    {cond.message}")
        else:
            out.append(f"  pending on router {ing.router_name}{host_note}")
    return out


def route_endpoints(route: Route, endpoints: Endpoints | None, limit: int = 10) -> str:
    """``ip:port, ip:port`` of the ready addresses, limited to the route's target port."""
    if endpoints is None:
        return "<none>"
    want = route.spec.port.target_port if route.spec.port else None
    pairs: list[str] = []
    for subset in endpoints.subsets:
        for port in subset.ports:
            if want is not None and not (
                (isinstance(want, str) and not is_digits(want) and port.name == want)
                or str(port.port) == str(want)
            ):
                continue
            pairs.extend(f"{a.ip}:{port.port}" for a in subset.addresses)
    if not pairs:
        return "<none>"
    text = ", ".join(pairs[:limit])
    if len(pairs) > limit:
        text += f" + {len(pairs) - limit} more..."
    return text


def describe_route(
    route: Route, endpoints: Mapping[str, Endpoints | None], now: dt.datetime
) -> list[str]:
    top = _header(route, now)
    top.add("Requested Host", [route.spec.host or "<none>", *route_ingress_lines(route, now)])
    top.add("Path", or_none(route.spec.path))
    tls = route.spec.tls
    top.add("TLS Termination", tls.termination if tls else "<none>")
    if tls is not None and tls.external_certificate and tls.external_certificate.name:
        top.add("External Certificate", f"secret/{tls.external_certificate.name}")
    top.add("Insecure Policy", or_none(tls.insecure_edge_termination_policy if tls else None))
    top.add(
        "Endpoint Port",
        str(route.spec.port.target_port) if route.spec.port else "<all endpoint ports>",
    )
    lines = top.lines()
    backends = route.backends()
    total = sum(b.weight if b.weight is not None else 100 for b in backends)
    for b in backends:
        weight = b.weight if b.weight is not None else 100
        share = weight * 100 // total if total else 0
        lines.append("")
        lines.extend(
            Block()
            .add("Service", b.name)
            .add("Weight", f"{weight} ({share}%)")
            .add("Endpoints", route_endpoints(route, endpoints.get(b.name)))
            .lines()
        )
    return lines


# ---------------------------------------------------------------- Service


def describe_service(svc: Service, endpoints: Endpoints | None, now: dt.datetime) -> list[str]:
    b = _header(svc, now)
    sel = svc.spec.selector
    b.add("Selector", ",".join(f"{k}={v}" for k, v in sorted(sel.items())) if sel else "<none>")
    b.add("Type", svc.spec.type)
    if svc.spec.ip_family_policy:
        b.add("IP Family Policy", svc.spec.ip_family_policy)
    b.add("IP Families", ",".join(svc.spec.ip_families or []) or "<none>")
    b.add("IP", or_none(svc.spec.cluster_ip))
    b.add("IPs", ",".join(svc.spec.effective_cluster_ips) or "<none>")
    if svc.spec.external_ips:
        b.add("External IPs", ",".join(svc.spec.external_ips))
    if svc.spec.load_balancer_ip:
        b.add("Desired LoadBalancer IP", svc.spec.load_balancer_ip)
    if svc.status.load_balancer.ingress:
        b.add("LoadBalancer Ingress", load_balancer_ingress(svc))
    if svc.spec.external_name:
        b.add("External Name", svc.spec.external_name)
    for p in svc.spec.ports:
        b.add("Port", f"{p.name or '<unset>'}  {p.port}/{p.protocol}")
        b.add("TargetPort", f"{p.effective_target_port}/{p.protocol}")
        if p.node_port:
            b.add("NodePort", f"{p.name or '<unset>'}  {p.node_port}/{p.protocol}")
        b.add("Endpoints", _service_port_endpoints(endpoints, p.name))
    if not svc.spec.ports:
        b.add("Ports", service_ports(svc))
    b.add("Session Affinity", svc.spec.session_affinity)
    if svc.spec.session_affinity == "ClientIP":
        b.add("Affinity Timeout", f"{svc.spec.affinity_timeout}s")
    if svc.spec.external_traffic_policy:
        b.add("External Traffic Policy", svc.spec.external_traffic_policy)
    if svc.spec.internal_traffic_policy:
        b.add("Internal Traffic Policy", svc.spec.internal_traffic_policy)
    if svc.spec.health_check_node_port:
        b.add("HealthCheck NodePort", str(svc.spec.health_check_node_port))
    return b.lines()


def load_balancer_ingress(svc: Service) -> str:
    """As kubectl shows ``status.loadBalancer.ingress``: each point's IP (else its
    hostname), with its ``ipMode`` when the balancer says it."""
    points = []
    for point in svc.status.load_balancer.ingress:
        shown = point.get("ip") or point.get("hostname") or ""
        mode = point.get("ipMode")
        points.append(f"{shown} ({mode})" if mode else shown)
    return ", ".join(points)


def _service_port_endpoints(endpoints: Endpoints | None, port_name: str | None) -> str:
    if endpoints is None:
        return "<none>"
    pairs = [
        f"{a.ip}:{p.port}"
        for s in endpoints.subsets
        for p in s.ports
        if (p.name or None) == (port_name or None) or len(s.ports) == 1
        for a in s.addresses
    ]
    return ",".join(pairs) or "<none>"


# ---------------------------------------------------------------- Endpoints


def describe_endpoints(ep: Endpoints, now: dt.datetime) -> list[str]:
    lines = _header(ep, now).lines()
    lines.append("Subsets:")
    if not ep.subsets:
        lines.append("  <none>")
    for s in ep.subsets:
        lines.extend(
            Block(indent=2)
            .add("Addresses", ",".join(a.ip for a in s.addresses) or "<none>")
            .add("NotReadyAddresses", ",".join(a.ip for a in s.not_ready_addresses) or "<none>")
            .lines()
        )
        lines.append("  Ports:")
        table = [("Name", "Port", "Protocol"), ("----", "----", "--------")]
        table += [(p.name or "<unset>", str(p.port), p.protocol) for p in s.ports]
        widths = [max(len(r[i]) for r in table) for i in range(3)]
        for r in table:
            lines.append("    " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        lines.append("")
    while lines and not lines[-1]:
        lines.pop()
    return lines


# ---------------------------------------------------------------- Pod


def _probe_text(kind: str, probe: Probe) -> str:
    if probe.http_get:
        h = probe.http_get
        what = f"http-get {h.scheme.lower()}://{h.host or ''}:{h.port}{h.path}"
    elif probe.tcp_socket:
        what = f"tcp-socket {probe.tcp_socket.host or ''}:{probe.tcp_socket.port}"
    elif probe.exec_:
        what = "exec [" + " ".join(probe.exec_.command) + "]"
    else:
        what = "<none>"
    return (
        f"{what} delay={probe.initial_delay_seconds}s timeout={probe.timeout_seconds}s "
        f"period={probe.period_seconds}s #success={probe.success_threshold} "
        f"#failure={probe.failure_threshold}"
    )


def describe_pod(pod: Pod, now: dt.datetime) -> list[str]:
    b = Block().add("Name", pod.name).add("Namespace", pod.namespace or "")
    node = pod.spec.node_name or "<none>"
    if pod.spec.node_name and pod.status.host_ip:
        node += f"/{pod.status.host_ip}"
    b.add("Node", node)
    b.add("Start Time", or_none(pod.status.start_time))
    b.add("Labels", mapping_lines(pod.metadata.labels))
    b.add("Annotations", mapping_lines(pod.metadata.annotations))
    b.add("Status", pod_status(pod))
    b.add("IP", or_none(pod.status.pod_ip))
    lines = b.lines()
    lines.append("Containers:")
    statuses = {c.name: c for c in pod.status.container_statuses}
    for c in pod.spec.containers:
        lines.append(f"  {c.name}:")
        cb = Block(indent=4)
        if c.image:
            cb.add("Image", c.image)
        if c.command:
            cb.add("Command", list(c.command))
        if c.args:
            cb.add("Args", list(c.args))
        ports = [
            f"{p.container_port}/{p.protocol}" + (f" ({p.name})" if p.name else "") for p in c.ports
        ]
        cb.add("Port", ", ".join(ports) or "<none>")
        st = statuses.get(c.name)
        if st is not None:
            state = next(iter(st.state), "Waiting")
            cb.add("State", state.capitalize())
            cb.add("Ready", str(st.ready))
            cb.add("Restart Count", str(st.restart_count))
        if c.readiness_probe:
            cb.add("Readiness", _probe_text("readiness", c.readiness_probe))
        if c.liveness_probe:
            cb.add("Liveness", _probe_text("liveness", c.liveness_probe))
        cb.add("Environment", [f"{e.name}: {e.value}" for e in c.env] or ["<none>"])
        lines.extend(cb.lines())
    lines.append("Conditions:")
    if pod.status.conditions:
        width = max(len("Type"), *(len(c.type) for c in pod.status.conditions)) + 2
        lines.append(f"  {'Type'.ljust(width)}Status")
        lines.extend(f"  {c.type.ljust(width)}{c.status}" for c in pod.status.conditions)
    else:
        lines.append("  <none>")
    return lines


# ---------------------------------------------------------------- cluster-scoped kinds


def describe_node(node: Node, now: dt.datetime) -> list[str]:
    b = _header(node, now)
    b.add("Status", node_status(node))
    b.add("Unschedulable", str(node.spec.unschedulable).lower())
    b.add("PodCIDR", or_none(node.spec.pod_cidr))
    b.add("Addresses", [f"{a.type}: {a.address}" for a in node.status.addresses] or ["<none>"])
    lines = b.lines()
    lines.append("Conditions:")
    if not node.status.conditions:
        lines.append("  <none>")
    for c in node.status.conditions:
        detail = " ".join(x for x in (c.reason, c.message) if x)
        lines.append(f"  {c.type}  {c.status}" + (f"  {detail}" if detail else ""))
    return lines


def describe_namespace(ns: Namespace, now: dt.datetime) -> list[str]:
    return _header(ns, now).add("Status", ns.status.phase).lines()


def describe_hostsubnet(hs: HostSubnet, now: dt.datetime) -> list[str]:
    b = _header(hs, now)
    b.add("Node", or_none(hs.host)).add("Node IP", or_none(hs.host_ip)).add(
        "Subnet", or_none(hs.subnet)
    )
    if hs.egress_ips:
        b.add("Egress IPs", ",".join(hs.egress_ips))
    return b.lines()


def describe_clusternetwork(cn: ClusterNetwork, now: dt.datetime) -> list[str]:
    b = _header(cn, now)
    b.add("Cluster Networks", cluster_networks_column(cn))
    b.add("Service Network", or_none(cn.service_network))
    b.add("Plugin Name", or_none(cn.plugin_name))
    if cn.vxlan_port:
        b.add("VXLAN Port", str(cn.vxlan_port))
    if cn.mtu:
        b.add("MTU", str(cn.mtu))
    return b.lines()


def describe_secret(secret: Secret, now: dt.datetime) -> list[str]:
    """kubectl's layout: the type and each key's size in bytes, never a value."""
    lines = _header(secret, now).lines()
    lines += ["", *Block().add("Type", secret.type).lines(), "", "Data", "===="]
    sizes = secret.sizes()
    lines += Block().add_all((k, f"{sizes[k]} bytes") for k in sorted(sizes)).lines()
    return lines


def _backend_text(backend: IngressBackend | None) -> str:
    if backend is None:
        return "<default>"
    if backend.service is not None:
        port = backend.service.port
        return f"{backend.service.name}:{port.name or port.number}"
    if backend.resource is not None:
        group = f".{backend.resource.api_group}" if backend.resource.api_group else ""
        return f"{backend.resource.kind}{group}/{backend.resource.name}"
    return "<none>"


def describe_ingress(ing: Ingress, routes: Sequence[Route], now: dt.datetime) -> list[str]:
    """kubectl's layout (address, class, default backend, TLS, rules), then the Routes
    the master keeps for the Ingress and whether a router admitted each."""
    address = ",".join(e.ip or e.hostname or "" for e in ing.status.load_balancer.ingress)
    b = _header(ing, now)
    b.add("Address", address)
    b.add("Ingress Class", ing.class_name or "<none>")
    b.add("Default backend", _backend_text(ing.spec.default_backend))
    tls = [f"{t.secret_name or 'SNI'} terminates {','.join(t.hosts)}" for t in ing.spec.tls]
    b.add("TLS", tls or ["<none>"])
    lines = [*b.lines(), "Rules:", "  Host  Path  Backends", "  ----  ----  --------"]
    for rule in ing.spec.rules:
        lines.append(f"  {rule.host or '*'}")
        for p in rule.http.paths if rule.http else []:
            kind = f" ({p.path_type})" if p.path_type else ""
            lines.append(f"        {p.path or '/'}{kind}  {_backend_text(p.backend)}")
    lines.append("Routes:")
    for route in sorted(routes, key=lambda r: (r.spec.host, r.spec.path, r.name)):
        admitted = [
            e.router_name
            for e in route.status.ingress
            if any(c.type == "Admitted" and c.status == "True" for c in e.conditions)
        ]
        by = f"admitted by {','.join(admitted)}" if admitted else "not admitted yet"
        lines.append(f"  {route.name}  {route.spec.host}{route.spec.path}  {by}")
    if not routes:
        lines.append("  <none>")
    return lines


def describe_generic(obj: Resource, now: dt.datetime) -> list[str]:
    return _header(obj, now).lines()
