"""What the running service proxy serves for one Service, read where it keeps it.

Why here: ``diagnose service`` must check the proxy that runs, in its mode and
its network namespace. The proxy's record (``proxy/run/mode.json`` in the
state directory) names the mode, the process and the namespace; the rules are
then read from that namespace only (``ip netns exec`` for a named one,
``nsenter --net=/proc/PID/ns/net`` for a proxy started inside another), read
only: ``nft -j list table`` and ``iptables-save``. The user-space proxy's
listeners are the process's own ``/proc/PID/net/tcp``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from shiftnet.diagnose import probes
from shiftnet.diagnose.proxy_record import ProxyRecord, parse_record
from shiftnet.diagnose.proxy_rules import (
    PortRules,
    iptables_port_rules,
    nft_port_rules,
    parse_nft_table,
)
from shiftnet.proxy.mode_record import process_start_time, record_path
from shiftnet.proxy.model import ServicePortName
from shiftnet.proxy.names import name_hash

NETNS_DIR = Path("/var/run/netns")


@dataclass(frozen=True)
class ProxyView:
    mode: str  # "" no usable record
    where: str
    problem: str
    running: bool
    ports: tuple[PortRules, ...]
    netns_path: str | None  # the namespace a client of the proxy connects from (None: ours)


def _alive(record: ProxyRecord) -> bool:
    started = process_start_time(record.pid)
    return started is not None and (record.started is None or started == record.started)


def _netns_inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _namespace(record: ProxyRecord) -> tuple[list[str], str | None, str]:
    """(command prefix, namespace path, words for the report) of the proxy's rules."""
    if record.netns:
        path = str(NETNS_DIR / record.netns)
        return ["ip", "netns", "exec", record.netns], path, f"network namespace {record.netns}"
    path = f"/proc/{record.pid}/ns/net"
    theirs = _netns_inode(path)
    if theirs is not None and theirs != _netns_inode("/proc/self/ns/net"):
        where = f"the network namespace of pid {record.pid}"
        return ["nsenter", f"--net={path}", "--"], path, where
    return [], None, "the host's network namespace"


def _svc_chains(namespace: str, name: str, port_name: str) -> tuple[str, ...]:
    """The service port's KUBE-SVC-/KUBE-SVL- chain names (iptables_layout's naming)."""
    h = name_hash(str(ServicePortName(namespace, name, port_name, "TCP")))
    return f"KUBE-SVC-{h}", f"KUBE-SVL-{h}"


async def proxy_view(
    state_dir: Path,
    namespace: str,
    name: str,
    cluster_ip: str,
    ports: tuple[tuple[int, str], ...],
) -> ProxyView:
    """The recorded proxy's rules for ``cluster_ip``'s TCP ``ports`` ((port, port name))."""
    path = record_path(state_dir)
    try:
        text = path.read_text()
    except OSError:
        problem = f"no service proxy has recorded its mode in {path}"
        return ProxyView("", "", problem, False, (), None)
    record = parse_record(text)
    if isinstance(record, str):
        problem = f"the proxy's record {path} is unreadable: {record}"
        return ProxyView("", "", problem, False, (), None)
    prefix, netns_path, where = _namespace(record)
    if not _alive(record):
        problem = f"the proxy that wrote {path} (pid {record.pid}) is not running"
        return ProxyView(record.mode, where, problem, False, (), netns_path)
    if netns_path is not None and not os.path.exists(netns_path):
        problem = f"{where} does not exist"
        return ProxyView(record.mode, where, problem, True, (), None)
    if record.mode == "userspace":
        listeners = probes.tcp_listeners(record.pid)
        found = tuple(
            PortRules(
                p,
                (cluster_ip, p) in listeners,
                f"{'listener' if (cluster_ip, p) in listeners else 'no listener'} "
                f"on {cluster_ip}:{p}",
            )
            for p, _ in ports
        )
        return ProxyView(record.mode, f"pid {record.pid}", "", True, found, netns_path)
    if record.mode == "nftables":
        where = f"table {record.nft_family} {record.nft_table} in {where}"
        listing = await probes.ruleset_text(
            *prefix, "nft", "-j", "list", "table", record.nft_family, record.nft_table
        )
        table = parse_nft_table(listing) if listing else None
        if table is None:
            return ProxyView(record.mode, where, "the table does not exist", True, (), netns_path)
        found = tuple(nft_port_rules(table, record, cluster_ip, "tcp", p) for p, _ in ports)
        return ProxyView(record.mode, where, "", True, found, netns_path)
    backend = record.iptables_backend
    if backend not in ("nft", "legacy"):  # the proxy's first sync did not resolve it
        from shiftnet.proxy.iptables_tools import detect_backend

        backend = await detect_backend(record.netns)
    save = f"iptables-{backend}-save"
    where = f"{save} -t {record.iptables_table} in {where}"
    nat = await probes.ruleset_text(*prefix, save, "-t", record.iptables_table)
    if not nat:
        return ProxyView(record.mode, where, f"{save} lists nothing", True, (), netns_path)
    filter_text = await probes.ruleset_text(*prefix, save, "-t", "filter")
    found = tuple(
        iptables_port_rules(
            nat, filter_text, record, cluster_ip, "tcp", p, _svc_chains(namespace, name, pn)
        )
        for p, pn in ports
    )
    return ProxyView(record.mode, where, "", True, found, netns_path)
