"""Addresses inside DNS names: dashed labels and reverse names. Pure.

An endpoint without a hostname, and every pod record, is named by its address
with dashes (``10-1-2-3``; IPv6 in the compressed form with ``:`` as ``-``,
``5678-abcd--2``), as CoreDNS names them; :func:`address_from_label` reads
such a label back. :func:`reverse_zones` gives the ``in-addr.arpa`` /
``ip6.arpa`` zones that cover a network, on the label boundaries a reverse
zone can have (8 bits for IPv4, one nibble for IPv6), the way CoreDNS splits
a reverse CIDR.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_LABEL_CHARS = frozenset("0123456789abcdef-")
MAX_REVERSE_ZONES = 256  # per network; a /9 is the most an IPv4 network needs (128)


def reverse_name(ip: str | Address) -> str:
    """``d.c.b.a.in-addr.arpa.`` (or the ip6.arpa nibble name) of an address."""
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    return addr.reverse_pointer + "."


def dashed_label(addr: Address) -> str:
    """The address as one label: ``10-1-2-3``; IPv6 compressed, ``fd00--0`` for ``fd00::``.

    A compressed IPv6 address can end in ``::``; CoreDNS appends a ``0`` so the
    label does not end in a dash, and so does this.
    """
    if addr.version == 4:
        return str(addr).replace(".", "-")
    text = addr.compressed.replace(":", "-")
    return text + "0" if text.endswith("-") else text


def address_from_label(label: str) -> Address | None:
    """The address a dashed label names, or None when it names none.

    Exactly three single dashes is IPv4; anything else is read as IPv6 with
    ``-`` for ``:``, so both the compressed (``fd00--1``) and the full
    (``fd00-0-0-0-0-0-0-1``) forms are accepted. Only hex digits and dashes
    count: no scope ids, no dotted forms.
    """
    if not label or len(label) > 63 or not _LABEL_CHARS.issuperset(label):
        return None
    if label.count("-") == 3 and "--" not in label:
        text = label.replace("-", ".")
    else:
        text = label.replace("-", ":")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def reverse_zones(cidr: str) -> list[str]:
    """The reverse zones (``30.172.in-addr.arpa.``) that together cover ``cidr``.

    A prefix between label boundaries is split into the zones of the next
    longer boundary (10.128.0.0/14 is four /16 zones), never widened, so
    shiftnet never claims addresses outside its networks. ValueError for a
    value that is not a network or would need more than 256 zones.
    """
    net = ipaddress.ip_network(cidr.strip(), strict=False)
    step = 8 if net.version == 4 else 4
    bound = -(-net.prefixlen // step) * step
    if bound == 0:
        raise ValueError(f"network {cidr!r} is the whole address space")
    if 2 ** (bound - net.prefixlen) > MAX_REVERSE_ZONES:
        raise ValueError(f"network {cidr!r} needs more than {MAX_REVERSE_ZONES} reverse zones")
    firsts = [net.network_address]
    if bound != net.prefixlen:
        firsts = [sub.network_address for sub in net.subnets(new_prefix=bound)]
    drop = (net.max_prefixlen - bound) // step  # labels below the zone's apex
    out = []
    for first in firsts:
        labels = first.reverse_pointer.split(".")
        out.append(".".join(labels[drop:]) + ".")
    return out
