"""Pod records ``<a-b-c-d>.<ns>.pod.<zone>``: which names exist in which mode. Pure.

The three modes of CoreDNS's ``pods`` option:

* ``disabled``: no pod names (everything below ``pod.<zone>`` is NXDOMAIN);
* ``insecure``: any dashed address in a namespace that exists answers that
  address, whether or not a pod has it (what kube-dns did);
* ``verified``: only an address a pod of that namespace has.

``pod.<zone>`` itself always exists; ``<ns>.pod.<zone>`` exists for a
namespace that exists unless pod records are disabled.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from shiftnet.dns.addresses import Address, address_from_label

POD_MODES = ("disabled", "insecure", "verified")


@dataclass(frozen=True)
class PodName:
    """What a name below ``pod.<zone>`` is: missing, an empty namespace node, or an address."""

    exists: bool
    address: Address | None = None


MISSING = PodName(False)
EMPTY = PodName(True)


def pod_name(
    labels: list[str],
    mode: str,
    namespaces: Set[str],
    pods: Set[tuple[str, Address]],
) -> PodName:
    """``labels`` are those left of ``pod.<zone>`` (``["10-1-2-3", "shop"]``)."""
    if mode == "disabled" or not labels or len(labels) > 2 or labels[-1] not in namespaces:
        return MISSING
    if len(labels) == 1:
        return EMPTY
    addr = address_from_label(labels[0])
    if addr is None:
        return MISSING
    if mode == "verified" and (labels[1], addr) not in pods:
        return MISSING
    return PodName(True, addr)
