"""The running proxy's record of its mode (``proxy/run/mode.json``), read back for ``diagnose``.

Why: the check of a Service's proxy rules looks where the proxy that runs puts
them (its mode, network namespace, nftables table or iptables tools and
chain) instead of guessing from any listener or ruleset that names the
ClusterIP. The proxy writes the record (``shiftnet.proxy.mode_record``);
this module only parses text given to it. Pure.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

MODES = ("userspace", "nftables", "iptables")


@dataclass(frozen=True)
class ProxyRecord:
    mode: str
    pid: int
    started: int | None  # the process's start time (clock ticks since boot)
    netns: str | None  # the named namespace of the kernel rules (``--netns``)
    nft_family: str = "ip"
    nft_table: str = ""
    service_map: str = ""  # base names; the live one carries one of map_suffixes
    no_endpoints_map: str = ""
    endpoints_maps: dict[str, str] = field(default_factory=dict)  # "tcp" -> map base name
    map_suffixes: tuple[str, ...] = ("",)
    iptables_backend: str = ""  # "nft", "legacy" or "auto"
    iptables_table: str = "nat"
    services_chain: str = ""


def _str(data: dict[str, object], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} is missing")
    return value


def parse_record(text: str) -> ProxyRecord | str:
    """The record, or one sentence saying what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError:
        return "it is not JSON"
    if not isinstance(data, dict):
        return "it is not a JSON object"
    mode, pid = data.get("mode"), data.get("pid")
    if mode not in MODES:
        return f"its mode {str(mode)[:20]!r} is not one of {', '.join(MODES)}"
    if type(pid) is not int or pid <= 0:
        return "its pid is not a process id"
    started = data.get("started")
    netns = data.get("netns")
    base = ProxyRecord(
        mode=str(mode),
        pid=pid,
        started=started if type(started) is int else None,
        netns=netns if isinstance(netns, str) and netns else None,
    )
    try:
        if mode == "nftables":
            nft = data.get("nftables")
            if not isinstance(nft, dict):
                return "it names no nftables table"
            maps = nft.get("endpoints_maps")
            suffixes = nft.get("map_suffixes")
            return dataclasses.replace(
                base,
                nft_family=_str(nft, "family"),
                nft_table=_str(nft, "table"),
                service_map=_str(nft, "service_map"),
                no_endpoints_map=_str(nft, "no_endpoints_map"),
                endpoints_maps={
                    str(k): str(v) for k, v in (maps.items() if isinstance(maps, dict) else ())
                },
                map_suffixes=tuple(str(s) for s in suffixes)
                if isinstance(suffixes, list) and suffixes
                else ("",),
            )
        if mode == "iptables":
            ipt = data.get("iptables")
            if not isinstance(ipt, dict):
                return "it names no iptables chain"
            return dataclasses.replace(
                base,
                iptables_backend=_str(ipt, "backend"),
                iptables_table=_str(ipt, "table"),
                services_chain=_str(ipt, "services_chain"),
            )
    except ValueError as err:
        return f"its {mode} part: {err}"
    return base
