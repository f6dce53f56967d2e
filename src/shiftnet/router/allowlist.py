"""``ip_allowlist`` / ``ip_whitelist``: which clients a route admits, read as OpenShift
reads it, except that a list never fails open.

OpenShift's router (``parseIPList``) splits the value on white space (Go's
``strings.Fields``), keeps every entry that is an IP address or a CIDR and
drops the others. Where it then applies no allowlist at all (every entry
invalid, or white space around the whole value) the route would answer every
client; here such a value still restricts the route: the entries that parse
are kept, and with none the route refuses every client. Each dropped entry
is named in a warning on the route's status.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from shiftnet.api.names import is_digits

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Go's unicode.IsSpace: the separators strings.Fields splits on (Python's
# str.split also splits on \x1c-\x1f, which Go keeps inside an entry).
_GO_SPACE_RE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_MAX_NAMED = 5  # dropped entries named in a warning; the rest are counted


@dataclass(frozen=True)
class Allowlist:
    """The networks kept (canonical, sorted, may be empty: then nobody is admitted)
    and the entries dropped, in the order given."""

    networks: tuple[str, ...]
    dropped: tuple[str, ...]


def has_entries(value: str) -> bool:
    """Whether ``value`` names anything (an empty or blank value is no allowlist)."""
    return bool(_GO_SPACE_RE.sub("", value))


def network(entry: str) -> Network | None:
    """``entry`` as Go's ``net.ParseIP`` or ``net.ParseCIDR`` reads it, else None.

    An address without a prefix is a /32 or /128; a CIDR's host bits are
    allowed (``10.1.2.3/16`` is ``10.1.0.0/16``); no zone (``%eth0``), no
    leading zeros in an IPv4 address, no netmask after the ``/``.
    """
    addr, slash, bits = entry.partition("/")
    if "%" in addr:
        return None
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return None
    if not slash:
        return ipaddress.ip_network(ip)
    if not is_digits(bits) or int(bits) > ip.max_prefixlen:
        return None
    return ipaddress.ip_network((ip, int(bits)), strict=False)


def parse_allowlist(value: str) -> Allowlist:
    """Every entry of ``value`` that is an address or a CIDR; the others dropped."""
    nets: set[Network] = set()
    dropped: list[str] = []
    for entry in _GO_SPACE_RE.split(value):
        if not entry:
            continue
        net = network(entry)
        if net is None:
            dropped.append(entry)
        else:
            nets.add(net)
    ordered = sorted(nets, key=lambda n: (n.version, int(n.network_address), n.prefixlen))
    return Allowlist(tuple(str(n) for n in ordered), tuple(dropped))


def dropped_warning(key: str, allowlist: Allowlist) -> str | None:
    """The status warning for the entries ``key`` lost; None when it lost none."""
    if not allowlist.dropped:
        return None
    shown = ", ".join(repr(e) for e in allowlist.dropped[:_MAX_NAMED])
    more = len(allowlist.dropped) - _MAX_NAMED
    if more > 0:
        shown += f" and {more} more"
    kept = len(allowlist.networks)
    if not kept:
        verdict = "no valid entry is left, so every client is refused"
    else:
        verdict = f"{kept} valid {'entry' if kept == 1 else 'entries'} kept"
    return (
        f"annotation {key}: entries that are not IP addresses or CIDRs ignored: {shown}; {verdict}"
    )
