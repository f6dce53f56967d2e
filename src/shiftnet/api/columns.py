"""The ``get`` columns of every kind: one definition for ``shiftnet get`` and the API's Tables.

Each column has the name the API server's Table gives it (kubectl and
``shiftnet get`` print it upper-cased), a description, a priority (1: only
with ``-o wide``) and the function that turns an object into its cell. The
cells are the text ``kubectl get`` / ``oc get`` show against a real cluster.
Pure: the caller passes ``now`` for the ages.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from shiftnet.api.ages import age
from shiftnet.api.base import Resource
from shiftnet.api.core import Endpoints, Namespace, Node, Pod, Service
from shiftnet.api.discovery import EndpointSlice
from shiftnet.api.event import Event
from shiftnet.api.ingress import Ingress, IngressClass
from shiftnet.api.network import ClusterNetwork, HostSubnet
from shiftnet.api.route import Route
from shiftnet.api.secret import Secret

Cell = Callable[[Resource, dt.datetime], str]


@dataclass(frozen=True)
class Column:
    """One column of a kind's table."""

    name: str
    description: str
    cell: Cell
    priority: int = 0
    type: str = "string"
    format: str = ""

    @property
    def header(self) -> str:
        """The heading kubectl prints: the name upper-cased."""
        return self.name.upper()


def or_none(value: str | None) -> str:
    return value if value else "<none>"


def _name(obj: Resource, now: dt.datetime) -> str:
    return obj.name


def _age(obj: Resource, now: dt.datetime) -> str:
    return age(obj.metadata.creation_timestamp, now)


NAME = Column(
    "Name",
    "The object's name, unique among objects of its kind in its namespace.",
    _name,
    format="name",
)
AGE = Column(
    "Age",
    "Time since the object was created (metadata.creationTimestamp).",
    _age,
)

# ---------------------------------------------------------------- pods


def pod_status(pod: Pod) -> str:
    """The STATUS column: the waiting/terminated reason when there is one, else the phase."""
    if pod.metadata.deletion_timestamp:
        return "Terminating"
    for cs in pod.status.container_statuses:
        for state in ("waiting", "terminated"):
            reason = (cs.state.get(state) or {}).get("reason")
            if reason:
                return str(reason)
    return pod.status.reason or pod.status.phase


def _pod(obj: Resource) -> Pod:
    assert isinstance(obj, Pod)
    return obj


def _pod_ready(obj: Resource, now: dt.datetime) -> str:
    pod = _pod(obj)
    ready = sum(1 for c in pod.status.container_statuses if c.ready)
    return f"{ready}/{len(pod.spec.containers)}"


def _pod_restarts(obj: Resource, now: dt.datetime) -> str:
    return str(sum(c.restart_count for c in _pod(obj).status.container_statuses))


POD_COLUMNS = (
    NAME,
    Column("Ready", "Containers ready, out of all the pod's containers.", _pod_ready),
    Column(
        "Status",
        "Why a container is waiting or ended when it is, else the pod's phase.",
        lambda o, now: pod_status(_pod(o)),
    ),
    Column("Restarts", "How many times the pod's containers have been restarted.", _pod_restarts),
    AGE,
    Column("IP", "The address given to the pod.", lambda o, now: or_none(_pod(o).status.pod_ip), 1),
    Column(
        "Node",
        "The node the pod is scheduled on.",
        lambda o, now: or_none(_pod(o).spec.node_name),
        1,
    ),
)

# ---------------------------------------------------------------- services


def service_ports(svc: Service) -> str:
    parts = []
    for p in svc.spec.ports:
        text = f"{p.port}:{p.node_port}" if p.node_port else str(p.port)
        parts.append(f"{text}/{p.protocol}")
    return ",".join(parts) or "<none>"


def _svc(obj: Resource) -> Service:
    assert isinstance(obj, Service)
    return obj


def _external_ip(obj: Resource, now: dt.datetime) -> str:
    svc = _svc(obj)
    if svc.spec.type == "ExternalName":
        return svc.spec.external_name or "<none>"
    ips = list(svc.spec.external_ips)
    ips += [i.get("ip") or i.get("hostname") or "" for i in svc.status.load_balancer.ingress]
    ips = [i for i in ips if i]
    if ips:
        return ",".join(ips)
    return "<pending>" if svc.spec.type == "LoadBalancer" else "<none>"


def _cluster_ip(obj: Resource, now: dt.datetime) -> str:
    svc = _svc(obj)
    return svc.spec.cluster_ip or ("<none>" if svc.spec.type == "ExternalName" else "<pending>")


def _selector(obj: Resource, now: dt.datetime) -> str:
    sel = _svc(obj).spec.selector
    return ",".join(f"{k}={v}" for k, v in sorted(sel.items())) if sel else "<none>"


SERVICE_COLUMNS = (
    NAME,
    Column(
        "Type",
        "How the service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName.",
        lambda o, now: _svc(o).spec.type,
    ),
    Column("Cluster-IP", "The service's virtual address inside the cluster.", _cluster_ip),
    Column(
        "External-IP",
        "Addresses outside the cluster that reach the service, or the external name.",
        _external_ip,
    ),
    Column(
        "Port(s)",
        "The service's ports (port:nodePort/protocol).",
        lambda o, now: service_ports(_svc(o)),
    ),
    AGE,
    Column("Selector", "The labels of the pods that back the service.", _selector, 1),
)

# ---------------------------------------------------------------- endpoints


def endpoint_list(ep: Endpoints, limit: int = 3) -> str:
    """``10.1.0.2:8080,10.1.0.3:8080 + 2 more...`` (ready addresses only, as kubectl)."""
    pairs = [f"{a.ip}:{p.port}" for s in ep.subsets for p in s.ports for a in s.addresses]
    if not pairs:
        pairs = [a.ip for s in ep.subsets if not s.ports for a in s.addresses]
    if not pairs:
        return "<none>"
    text = ",".join(pairs[:limit])
    if len(pairs) > limit:
        text += f" + {len(pairs) - limit} more..."
    return text


def _endpoints_cell(obj: Resource, now: dt.datetime) -> str:
    assert isinstance(obj, Endpoints)
    return endpoint_list(obj)


ENDPOINTS_COLUMNS = (
    NAME,
    Column("Endpoints", "The ready addresses and ports behind the service.", _endpoints_cell),
    AGE,
)

# ---------------------------------------------------------------- endpoint slices


def _more(items: list[str], limit: int = 3) -> str:
    """``a,b,c + 2 more...``, or ``<unset>`` for none (kubectl's EndpointSlice cells)."""
    if not items:
        return "<unset>"
    text = ",".join(items[:limit])
    if len(items) > limit:
        text += f" + {len(items) - limit} more..."
    return text


def _slice(obj: Resource) -> EndpointSlice:
    assert isinstance(obj, EndpointSlice)
    return obj


def _slice_address_type(obj: Resource, now: dt.datetime) -> str:
    return _slice(obj).address_type


def _slice_ports(obj: Resource, now: dt.datetime) -> str:
    ports = _slice(obj).ports
    return _more([str(p.port) if p.port is not None else "<unset>" for p in ports])


def _slice_endpoints(obj: Resource, now: dt.datetime) -> str:
    return _more([a for e in _slice(obj).endpoints for a in e.addresses])


ENDPOINTSLICE_COLUMNS = (
    NAME,
    Column("AddressType", "The kind of addresses the slice holds.", _slice_address_type),
    Column("Ports", "The ports of the slice's endpoints.", _slice_ports),
    Column("Endpoints", "The addresses of the slice's endpoints.", _slice_endpoints),
    AGE,
)

# ---------------------------------------------------------------- secrets


def _secret(obj: Resource) -> Secret:
    assert isinstance(obj, Secret)
    return obj


SECRET_COLUMNS = (
    NAME,
    Column("Type", "What the secret's data is for.", lambda o, now: _secret(o).type),
    Column(
        "Data",
        "How many keys the secret holds (never their values).",
        lambda o, now: str(len(_secret(o).data)),
        type="integer",
    ),
    AGE,
)

# ---------------------------------------------------------------- events (as kubectl)


def _event(obj: Resource) -> Event:
    assert isinstance(obj, Event)
    return obj


EVENT_COLUMNS = (
    Column(
        "Last Seen",
        "Time since the event last happened.",
        lambda o, now: age(_event(o).last_seen(), now),
    ),
    Column("Type", "Normal or Warning.", lambda o, now: _event(o).type or ""),
    Column("Reason", "Why it happened, one word.", lambda o, now: _event(o).reason or ""),
    Column("Object", "The object it is about (kind/name).", lambda o, now: _event(o).object_text()),
    Column(
        "Subobject",
        "The part of the object it is about (e.g. a container).",
        lambda o, now: _event(o).involved_object.field_path or "",
        priority=1,
    ),
    Column("Source", "Who recorded it.", lambda o, now: _event(o).source_text(), priority=1),
    Column("Message", "What happened.", lambda o, now: (_event(o).message or "").strip()),
    Column(
        "First Seen",
        "Time since the event first happened.",
        lambda o, now: age(_event(o).first_seen(), now),
        priority=1,
    ),
    Column(
        "Count",
        "How many times it happened.",
        lambda o, now: str(_event(o).times_seen()),
        priority=1,
        type="integer",
    ),
    Column("Name", "The event's name.", _name, priority=1, format="name"),
)

# ---------------------------------------------------------------- ingresses (as kubectl)


def _ingress(obj: Resource) -> Ingress:
    assert isinstance(obj, Ingress)
    return obj


def ingress_hosts(ing: Ingress) -> str:
    """kubectl's HOSTS: each rule's host ("*" for none), at most three then "+ N more..."."""
    hosts = [r.host or "*" for r in ing.spec.rules]
    if len(hosts) > 3:
        return ",".join(hosts[:3]) + f" + {len(hosts) - 3} more..."
    return ",".join(hosts) if hosts else "*"


def ingress_address(ing: Ingress) -> str:
    """kubectl's ADDRESS: every load balancer entry's IP or host name."""
    found = [e.ip or e.hostname or "" for e in ing.status.load_balancer.ingress]
    return ",".join(x for x in found if x)


def _ingress_class(obj: Resource) -> IngressClass:
    assert isinstance(obj, IngressClass)
    return obj


def _parameters(ic: IngressClass) -> str:
    p = ic.spec.parameters
    if p is None:
        return "<none>"
    kind = f"{p.kind}.{p.api_group}" if p.api_group else p.kind
    return f"{kind}/{p.name}"


INGRESS_COLUMNS = (
    NAME,
    Column(
        "Class",
        "The IngressClass that serves the ingress.",
        lambda o, now: or_none(_ingress(o).spec.ingress_class_name),
    ),
    Column("Hosts", "The hosts of the ingress's rules.", lambda o, now: ingress_hosts(_ingress(o))),
    Column(
        "Address",
        "Where the ingress is reachable: the routers that admitted its routes.",
        lambda o, now: ingress_address(_ingress(o)),
    ),
    Column(
        "Ports",
        "80, and 443 when the ingress has TLS.",
        lambda o, now: "80, 443" if _ingress(o).spec.tls else "80",
    ),
    AGE,
)

INGRESSCLASS_COLUMNS = (
    NAME,
    Column(
        "Controller",
        "The controller serving ingresses of this class.",
        lambda o, now: _ingress_class(o).spec.controller,
    ),
    Column(
        "Parameters",
        "The object with the controller's settings for the class.",
        lambda o, now: _parameters(_ingress_class(o)),
    ),
    AGE,
)

# ---------------------------------------------------------------- routes (as `oc get routes`)


def route_host_column(route: Route) -> str:
    """HOST/PORT: the admitted host, or why it is not served (``Pending``, a rejection reason)."""
    host = route.spec.host
    ingress = route.status.ingress
    admitted = rejected = 0
    reason = ""
    matched = False
    for ing in ingress:
        cond = next((c for c in ing.conditions if c.type == "Admitted"), None)
        if cond is None:
            continue
        if cond.status == "True":
            admitted += 1
            if not matched:
                matched = (ing.host or "") == route.spec.host
                host = ing.host or host
        elif cond.status == "False":
            rejected += 1
            reason = cond.reason or "Rejected"
    if not ingress:
        return host  # no router has reported yet: show what was asked for
    if admitted == 0 and rejected:
        return reason
    if rejected:
        return f"{host} ... {rejected} rejected"
    if admitted == 0:
        return "Pending"
    if admitted > 1:
        return f"{host} ... {admitted - 1} more"
    return host


def route_services_column(route: Route) -> str:
    backends = route.backends()
    total = sum(b.weight or 0 for b in backends)
    out = []
    for b in backends:
        if b.weight is None or (len(backends) == 1 and total):
            out.append(b.name)
        elif total == 0:
            out.append(f"{b.name}(0%)")
        else:
            out.append(f"{b.name}({b.weight * 100 // total}%)")
    return ",".join(out)


def route_termination_column(route: Route) -> str:
    tls = route.spec.tls
    if tls is None:
        return ""
    policy = tls.insecure_edge_termination_policy
    if policy and policy != "None":
        return f"{tls.termination}/{policy}"
    return tls.termination


def _route(obj: Resource) -> Route:
    assert isinstance(obj, Route)
    return obj


def _route_port(obj: Resource, now: dt.datetime) -> str:
    port = _route(obj).spec.port
    return str(port.target_port) if port else "<all>"


ROUTE_COLUMNS = (
    NAME,
    Column(
        "Host/Port",
        "The host the route is served on, or why no router admitted it.",
        lambda o, now: route_host_column(_route(o)),
    ),
    Column("Path", "The path prefix the route matches.", lambda o, now: _route(o).spec.path),
    Column(
        "Services",
        "The services behind the route and each one's share of the traffic.",
        lambda o, now: route_services_column(_route(o)),
    ),
    Column("Port", "The target port on the service's endpoints.", _route_port),
    Column(
        "Termination",
        "Where TLS ends and what happens to plain HTTP.",
        lambda o, now: route_termination_column(_route(o)),
    ),
    Column(
        "Wildcard",
        "Whether the route also serves every host of its host's domain.",
        lambda o, now: _route(o).spec.wildcard_policy,
    ),
)

# ---------------------------------------------------------------- cluster-scoped kinds


def node_status(node: Node) -> str:
    cond = next((c for c in node.status.conditions if c.type == "Ready"), None)
    if cond is None:
        text = "NotReady"
    elif cond.status == "True":
        text = "Ready"
    elif cond.status == "False":
        text = "NotReady"
    else:
        text = "Unknown"
    if node.spec.unschedulable:
        text += ",SchedulingDisabled"
    return text


def _node(obj: Resource) -> Node:
    assert isinstance(obj, Node)
    return obj


NODE_COLUMNS = (
    NAME,
    Column(
        "Status",
        "Whether the node is ready, and whether new pods may be placed on it.",
        lambda o, now: node_status(_node(o)),
    ),
    AGE,
    Column(
        "Internal-IP",
        "The node's address inside the cluster.",
        lambda o, now: or_none(_node(o).internal_ip),
        1,
    ),
    Column(
        "Pod-CIDR",
        "The range the node's pods take addresses from.",
        lambda o, now: or_none(_node(o).spec.pod_cidr),
        1,
    ),
)


def _namespace_phase(obj: Resource, now: dt.datetime) -> str:
    assert isinstance(obj, Namespace)
    return obj.status.phase


NAMESPACE_COLUMNS = (
    NAME,
    Column("Status", "Active, or Terminating while the namespace is deleted.", _namespace_phase),
    AGE,
)


def _subnet(obj: Resource) -> HostSubnet:
    assert isinstance(obj, HostSubnet)
    return obj


HOSTSUBNET_COLUMNS = (
    NAME,
    Column("Host", "The node this subnet belongs to.", lambda o, now: _subnet(o).host),
    Column("Host IP", "The node's address on the underlay.", lambda o, now: _subnet(o).host_ip),
    Column("Subnet", "The node's share of the cluster network.", lambda o, now: _subnet(o).subnet),
)


def cluster_networks_column(cn: ClusterNetwork) -> str:
    entries = [f"{e.cidr}:{e.host_subnet_length}" for e in cn.cluster_networks]
    if not entries and cn.network:
        entries = [f"{cn.network}:{cn.hostsubnetlength or 0}"]
    return ",".join(entries) or "<none>"


def _network(obj: Resource) -> ClusterNetwork:
    assert isinstance(obj, ClusterNetwork)
    return obj


CLUSTERNETWORK_COLUMNS = (
    NAME,
    Column(
        "Cluster Networks",
        "The pod networks and the host bits of each node subnet (CIDR:bits).",
        lambda o, now: cluster_networks_column(_network(o)),
    ),
    Column(
        "Service Network",
        "The range service addresses come from.",
        lambda o, now: or_none(_network(o).service_network),
    ),
    Column(
        "Plugin Name",
        "The SDN plugin the cluster runs.",
        lambda o, now: or_none(_network(o).plugin_name),
    ),
)

COLUMNS: dict[str, tuple[Column, ...]] = {
    "pods": POD_COLUMNS,
    "services": SERVICE_COLUMNS,
    "endpoints": ENDPOINTS_COLUMNS,
    "endpointslices": ENDPOINTSLICE_COLUMNS,
    "secrets": SECRET_COLUMNS,
    "events": EVENT_COLUMNS,
    "routes": ROUTE_COLUMNS,
    "ingresses": INGRESS_COLUMNS,
    "ingressclasses": INGRESSCLASS_COLUMNS,
    "nodes": NODE_COLUMNS,
    "namespaces": NAMESPACE_COLUMNS,
    "hostsubnets": HOSTSUBNET_COLUMNS,
    "clusternetworks": CLUSTERNETWORK_COLUMNS,
}
GENERIC_COLUMNS = (NAME, AGE)


def columns_for(cls: type[Resource], *, wide: bool = True) -> tuple[Column, ...]:
    """The columns of a kind; without ``wide`` only priority-0 ones (plain ``get``)."""
    columns = COLUMNS.get(cls.RESOURCE, GENERIC_COLUMNS)
    return columns if wide else tuple(c for c in columns if c.priority == 0)


def cells(columns: tuple[Column, ...], obj: Resource, now: dt.datetime) -> list[str]:
    """One object's row under ``columns``."""
    return [c.cell(obj, now) for c in columns]
