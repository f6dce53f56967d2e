"""The ``get`` table of each kind, with the columns kubectl and oc print."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shiftnet.api import (
    ClusterNetwork,
    Endpoints,
    HostSubnet,
    Namespace,
    Node,
    Pod,
    Resource,
    Route,
    Service,
)
from shiftnet.cli.printing import age, format_table, or_none

Row = list[str]


@dataclass(frozen=True)
class TableSpec:
    header: tuple[str, ...]
    row: Callable[[Resource, dt.datetime], Row]
    wide_header: tuple[str, ...] = ()
    wide_row: Callable[[Resource], Row] | None = None


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


def _pod_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, Pod)
    total = len(obj.spec.containers)
    ready = sum(1 for c in obj.status.container_statuses if c.ready)
    restarts = sum(c.restart_count for c in obj.status.container_statuses)
    return [
        obj.name,
        f"{ready}/{total}",
        pod_status(obj),
        str(restarts),
        age(obj.metadata.creation_timestamp, now),
    ]


def _pod_wide(obj: Resource) -> Row:
    assert isinstance(obj, Pod)
    return [or_none(obj.status.pod_ip), or_none(obj.spec.node_name)]


# ---------------------------------------------------------------- services


def service_ports(svc: Service) -> str:
    parts = []
    for p in svc.spec.ports:
        text = f"{p.port}:{p.node_port}" if p.node_port else str(p.port)
        parts.append(f"{text}/{p.protocol}")
    return ",".join(parts) or "<none>"


def _external_ip(svc: Service) -> str:
    if svc.spec.type == "ExternalName":
        return svc.spec.external_name or "<none>"
    ips = list(svc.spec.external_ips)
    ips += [i.get("ip") or i.get("hostname") or "" for i in svc.status.load_balancer.ingress]
    ips = [i for i in ips if i]
    if ips:
        return ",".join(ips)
    return "<pending>" if svc.spec.type == "LoadBalancer" else "<none>"


def _service_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, Service)
    cluster_ip = obj.spec.cluster_ip or (
        "<none>" if obj.spec.type == "ExternalName" else "<pending>"
    )
    return [
        obj.name,
        obj.spec.type,
        cluster_ip,
        _external_ip(obj),
        service_ports(obj),
        age(obj.metadata.creation_timestamp, now),
    ]


def _service_wide(obj: Resource) -> Row:
    assert isinstance(obj, Service)
    sel = obj.spec.selector
    return [",".join(f"{k}={v}" for k, v in sorted(sel.items())) if sel else "<none>"]


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


def _endpoints_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, Endpoints)
    return [obj.name, endpoint_list(obj), age(obj.metadata.creation_timestamp, now)]


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


def _route_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, Route)
    port = str(obj.spec.port.target_port) if obj.spec.port else "<all>"
    return [
        obj.name,
        route_host_column(obj),
        obj.spec.path,
        route_services_column(obj),
        port,
        route_termination_column(obj),
        obj.spec.wildcard_policy,
    ]


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


def _node_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, Node)
    return [obj.name, node_status(obj), age(obj.metadata.creation_timestamp, now)]


def _node_wide(obj: Resource) -> Row:
    assert isinstance(obj, Node)
    return [or_none(obj.internal_ip), or_none(obj.spec.pod_cidr)]


def _namespace_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, Namespace)
    return [obj.name, obj.status.phase, age(obj.metadata.creation_timestamp, now)]


def _hostsubnet_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, HostSubnet)
    return [obj.name, obj.host, obj.host_ip, obj.subnet]


def cluster_networks_column(cn: ClusterNetwork) -> str:
    entries = [f"{e.cidr}:{e.host_subnet_length}" for e in cn.cluster_networks]
    if not entries and cn.network:
        entries = [f"{cn.network}:{cn.hostsubnetlength or 0}"]
    return ",".join(entries) or "<none>"


def _clusternetwork_row(obj: Resource, now: dt.datetime) -> Row:
    assert isinstance(obj, ClusterNetwork)
    return [
        obj.name,
        cluster_networks_column(obj),
        or_none(obj.service_network),
        or_none(obj.plugin_name),
    ]


def _generic_row(obj: Resource, now: dt.datetime) -> Row:
    return [obj.name, age(obj.metadata.creation_timestamp, now)]


TABLES: dict[str, TableSpec] = {
    "pods": TableSpec(
        ("NAME", "READY", "STATUS", "RESTARTS", "AGE"), _pod_row, ("IP", "NODE"), _pod_wide
    ),
    "services": TableSpec(
        ("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"),
        _service_row,
        ("SELECTOR",),
        _service_wide,
    ),
    "endpoints": TableSpec(("NAME", "ENDPOINTS", "AGE"), _endpoints_row),
    "routes": TableSpec(
        ("NAME", "HOST/PORT", "PATH", "SERVICES", "PORT", "TERMINATION", "WILDCARD"), _route_row
    ),
    "nodes": TableSpec(
        ("NAME", "STATUS", "AGE"), _node_row, ("INTERNAL-IP", "POD-CIDR"), _node_wide
    ),
    "namespaces": TableSpec(("NAME", "STATUS", "AGE"), _namespace_row),
    "hostsubnets": TableSpec(("NAME", "HOST", "HOST IP", "SUBNET"), _hostsubnet_row),
    "clusternetworks": TableSpec(
        ("NAME", "CLUSTER NETWORKS", "SERVICE NETWORK", "PLUGIN NAME"), _clusternetwork_row
    ),
}
GENERIC = TableSpec(("NAME", "AGE"), _generic_row)


def render_table(
    cls: type[Resource],
    objects: Sequence[Resource],
    now: dt.datetime,
    *,
    wide: bool = False,
    with_namespace: bool = False,
) -> str:
    """The ``get`` table for objects of one kind (``-A`` adds NAMESPACE first)."""
    header, rows = table_rows(cls, objects, now, wide=wide, with_namespace=with_namespace)
    return format_table(header, rows)


def table_rows(
    cls: type[Resource],
    objects: Sequence[Resource],
    now: dt.datetime,
    *,
    wide: bool = False,
    with_namespace: bool = False,
) -> tuple[list[str], list[Row]]:
    """Header and rows of the ``get`` table, before layout."""
    spec = TABLES.get(cls.RESOURCE, GENERIC)
    header = list(spec.header)
    if wide and spec.wide_row is not None:
        header += spec.wide_header
    if with_namespace:
        header.insert(0, "NAMESPACE")
    rows = []
    for obj in objects:
        row = spec.row(obj, now)
        if wide and spec.wide_row is not None:
            row += spec.wide_row(obj)
        if with_namespace:
            row.insert(0, obj.namespace or "")
        rows.append(row)
    return header, rows
