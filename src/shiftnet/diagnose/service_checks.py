"""The checks of ``diagnose service``, along the services document's path of a connection.

1. a ClusterIP is allocated; 2. the endpoints list ready pods; 3. the proxy
that runs (its recorded mode) serves each port of the ClusterIP (user-space:
a listener is open; nftables / iptables: the port's map element or chain is in
its table, see ``proxy_rules``); 4. the cluster DNS answers the
service's name with that ClusterIP; 5. a real connection through the
ClusterIP is answered. Pure: each check is a function of :class:`ServiceFacts`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftnet.diagnose.proxy_rules import PortRules
from shiftnet.diagnose.result import Check, Report
from shiftnet.diagnose.route_checks import unready_fix
from shiftnet.diagnose.route_facts import PodView


@dataclass(frozen=True)
class ServiceFacts:
    namespace: str
    name: str
    exists: bool
    cluster_ip: str  # "" none allocated, "None" headless
    ports: tuple[int, ...]
    selector: dict[str, str]
    ready: tuple[str, ...]  # "pod ip:port" of ready endpoint addresses
    not_ready: tuple[str, ...]
    pods: tuple[PodView, ...]
    proxy_mode: str  # the recorded mode: "userspace", "nftables", "iptables"; "" no record
    proxy_where: str  # where its rules or listeners were read
    proxy_problem: str  # why nothing could be read per port ("" nothing wrong)
    proxy_running: bool  # the recorded proxy process is alive
    proxy_ports: tuple[PortRules, ...]  # each TCP port of the ClusterIP
    dns_name: str
    dns_server: str  # "addr:port" asked ("" none known)
    dns_answer: tuple[str, ...] | None  # None: not asked
    dns_error: str
    connection: str | None  # what a connection met ("" answered), None: not tried


def _svc(f: ServiceFacts) -> str:
    return f"{f.namespace}/{f.name}"


def check_cluster_ip(f: ServiceFacts) -> Check:
    name = "a ClusterIP is allocated"
    if not f.exists:
        return Check(name, False, f"service {_svc(f)} does not exist", "create it")
    if f.cluster_ip == "None":
        return Check(name, True, "headless (clusterIP: None): DNS names the pods directly")
    if not f.cluster_ip:
        return Check(
            name,
            False,
            f"service {_svc(f)} has no spec.clusterIP",
            "the master allocates it: is `shiftnet master` (or `shiftnet up`) running? "
            "see `shiftnet get events`",
        )
    return Check(name, True, f"{f.cluster_ip} ports {', '.join(map(str, f.ports)) or 'none'}")


def check_endpoints(f: ServiceFacts) -> Check:
    name = "the endpoints list ready pods"
    if f.ready:
        extra = f", {len(f.not_ready)} not ready" if f.not_ready else ""
        return Check(name, True, f"{len(f.ready)} ready ({', '.join(f.ready[:3])}){extra}")
    if not f.pods:
        sel = ",".join(f"{k}={v}" for k, v in sorted(f.selector.items())) or "none"
        return Check(
            name,
            False,
            f"the selector ({sel}) matches no pod",
            "start pods with those labels, or fix spec.selector",
        )
    unready = [p for p in f.pods if not p.ready]
    detail = f": pod `{unready[0].name}`: {unready[0].message}" if unready else ""
    return Check(
        name,
        False,
        f"0 of {len(f.pods)} pods pass their readiness probe{detail}",
        unready_fix(unready),
    )


def check_proxy(f: ServiceFacts) -> Check:
    name = "the proxy serves the ClusterIP"
    if f.cluster_ip in ("", "None"):
        return Check(name, f.cluster_ip == "None", "no ClusterIP to serve", "see check 1")
    if not f.proxy_mode:
        return Check(
            name,
            False,
            f.proxy_problem or "no service proxy has recorded its mode in this state directory",
            "start the service proxy (`shiftnet proxy` or `shiftnet up`) with this state directory",
        )
    head = f"{f.proxy_mode} mode ({f.proxy_where})" if f.proxy_where else f"{f.proxy_mode} mode"
    if not f.proxy_running:
        return Check(
            name,
            False,
            f"{head}: {f.proxy_problem}",
            "start the service proxy again (`shiftnet proxy` or `shiftnet up`): rules it "
            "left behind no longer follow changes",
        )
    if f.proxy_problem:
        return Check(
            name,
            False,
            f"{head}: {f.proxy_problem}",
            "see the proxy's log: its rules were not applied or were removed; restarting "
            "the proxy writes them again",
        )
    missing = [p for p in f.proxy_ports if not p.ok]
    if missing:
        found = "; ".join(f"port {p.port}: {p.text}" for p in missing)
        if f.proxy_mode == "userspace":
            fix = (
                "see the proxy's log: it has not synced this service, or refused one of its "
                "fields (`shiftnet get events`)"
            )
        else:
            fix = (
                "the proxy has not written this service's rules or they were removed by hand: "
                "see its log for an apply the kernel refused; restarting the proxy writes "
                "its rules again"
            )
        return Check(name, False, f"{head}: {found}", fix)
    if not f.proxy_ports:
        return Check(name, True, f"{head}: the service has no TCP port to check")
    return Check(name, True, f"{head}: " + "; ".join(p.text for p in f.proxy_ports))


def check_dns(f: ServiceFacts) -> Check:
    name = "the cluster DNS answers the service's name"
    if f.dns_answer is None:
        return Check(
            name,
            False,
            f"no cluster DNS known to ask for {f.dns_name}",
            "pass --dns ADDR:PORT, or start `shiftnet up`",
        )
    if f.dns_error:
        return Check(
            name,
            False,
            f"{f.dns_server} answers {f.dns_name}: {f.dns_error}",
            "is `shiftnet dns` running and watching this store?",
        )
    want = f.cluster_ip
    if want == "None" or want in f.dns_answer:
        return Check(name, True, f"{f.dns_name} -> {', '.join(f.dns_answer)} ({f.dns_server})")
    return Check(
        name,
        False,
        f"{f.dns_server} answers {', '.join(f.dns_answer) or 'nothing'} for {f.dns_name}, "
        f"not {want}",
        "the DNS server has not seen the service yet, or serves another store",
    )


def check_connection(f: ServiceFacts) -> Check:
    name = "a real connection through the ClusterIP"
    if f.connection is None:
        return Check(name, f.cluster_ip == "None", "not tried: no ClusterIP and port", "")
    where = f"{f.cluster_ip}:{f.ports[0]}" if f.ports else f.cluster_ip
    if f.connection == "":
        return Check(name, True, f"{where} answered")
    return Check(name, False, f"{where}: {f.connection}", "see checks 2 and 3")


def diagnose_service(f: ServiceFacts) -> Report:
    checks = (
        check_cluster_ip(f),
        check_endpoints(f),
        check_proxy(f),
        check_dns(f),
        check_connection(f),
    )
    return Report(f"service {_svc(f)}", checks)
