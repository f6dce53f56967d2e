"""Pure address arithmetic: single IPs and subnets handed out from a CIDR.

The master's allocators (ClusterIPs from the service network, node subnets
from the cluster network) and the node agent's pod IPs all need the same
thing: a pool of numbered slots inside a CIDR, some of them reserved, from
which a caller either asks for a specific value or for "any free one", gives
values back, and rebuilds the pool from what the store already holds after a
restart. This module holds that pool and nothing else: no I/O, no clock, no
randomness.

Choice of a free value: always the **lowest free** slot. Kubernetes picks
ClusterIPs at random; we prefer a rule whose result depends only on the set
of values in use, so a restart, a test or a second reader computes the same
answer. The price is that a released value is the first one handed out
again; callers that mind (none of ours do) can keep a value allocated for a
while before releasing it.

Errors use Kubernetes' own wording so users recognise them:
``provided IP is already allocated``, ``provided IP is not in the valid
range. The range of valid IPs is <cidr>``, ``range is full``.
"""

from __future__ import annotations

import heapq
import ipaddress
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from shiftnet.errors import AllocationError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class AlreadyAllocated(AllocationError):
    """The requested value is held by someone else."""


class NotInRange(AllocationError):
    """The requested value is outside the pool's CIDR or is a reserved address."""


class RangeFull(AllocationError):
    """Every slot of the pool is in use."""


def parse_network(text: str, *, what: str = "CIDR") -> IPNetwork:
    """A CIDR in strict form (host bits zero); AllocationError in one sentence otherwise."""
    try:
        return ipaddress.ip_network(text.strip(), strict=True)
    except ValueError as exc:
        raise AllocationError(f'{what} "{text}" is not a valid network: {exc}') from None


def parse_address(text: str) -> IPAddress:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise AllocationError(f'"{text}" is not a valid IP address') from None


class SlotPool:
    """Numbered slots ``0 .. size-1``; some reserved; lowest-free allocation.

    Allocation of the lowest free slot is O(log n) amortised: every free slot
    below the high-water mark sits in a heap (with lazy deletion), every slot
    at or above it is free unless reserved or taken by a specific request.
    """

    def __init__(self, size: int, reserved: Iterable[int] = ()) -> None:
        if size < 0:
            raise ValueError("size must not be negative")
        self.size = size
        self.reserved: frozenset[int] = frozenset(r for r in reserved if 0 <= r < size)
        self._used: set[int] = set()
        self._below: list[int] = []  # candidate free slots below _mark (lazy)
        self._mark = 0  # every slot >= _mark is free unless reserved or in _used

    # ----------------------------------------------------------- queries

    @property
    def capacity(self) -> int:
        """How many slots can ever be allocated (size minus reserved)."""
        return self.size - len(self.reserved)

    @property
    def used(self) -> int:
        return len(self._used)

    @property
    def free(self) -> int:
        return self.capacity - len(self._used)

    def is_used(self, slot: int) -> bool:
        return slot in self._used

    def used_slots(self) -> list[int]:
        return sorted(self._used)

    # ----------------------------------------------------------- changes

    def take(self, slot: int) -> bool:
        """Mark ``slot`` used; False if it already was (or is reserved / outside)."""
        if slot in self._used or slot in self.reserved or not 0 <= slot < self.size:
            return False
        self._used.add(slot)
        return True

    def take_lowest(self) -> int | None:
        """The lowest free slot, now used; None when full."""
        while self._below:
            slot = heapq.heappop(self._below)
            if slot not in self._used:
                self._used.add(slot)
                return slot
        while self._mark < self.size:
            slot = self._mark
            self._mark += 1
            if slot not in self._used and slot not in self.reserved:
                self._used.add(slot)
                return slot
        return None

    def give_back(self, slot: int) -> bool:
        """Free ``slot``; False if it was not used."""
        if slot not in self._used:
            return False
        self._used.discard(slot)
        if slot < self._mark:
            heapq.heappush(self._below, slot)
        return True

    def clear(self) -> None:
        self._used.clear()
        self._below.clear()
        self._mark = 0


@dataclass(frozen=True)
class RebuildResult:
    """What a rebuild kept and what it had to refuse (duplicates, out of range)."""

    kept: tuple[str, ...]
    duplicates: tuple[str, ...]
    out_of_range: tuple[str, ...]


class _SlotRange:
    """What every range does with its :class:`SlotPool`; subclasses map values to slots.

    ``_slot(value)`` raises NotInRange for a value that is not ours, ``_value(slot)``
    renders a slot, and ``NOUN`` names the value in Kubernetes-style errors.
    """

    NOUN = "value"
    _pool: SlotPool

    def _slot(self, value: str) -> int:
        raise NotImplementedError

    def _value(self, slot: int) -> str:
        raise NotImplementedError

    @property
    def capacity(self) -> int:
        return self._pool.capacity

    @property
    def used(self) -> int:
        return self._pool.used

    @property
    def free(self) -> int:
        return self._pool.free

    def contains(self, value: str) -> bool:
        """True when ``value`` could be allocated here (inside the range, not reserved)."""
        try:
            self._slot(value)
        except NotInRange:
            return False
        return True

    def is_allocated(self, value: str) -> bool:
        try:
            return self._pool.is_used(self._slot(value))
        except NotInRange:
            return False

    def allocated(self) -> list[str]:
        """Every allocated value, in numeric order."""
        return [self._value(s) for s in self._pool.used_slots()]

    def allocate(self, value: str) -> str:
        """Allocate exactly ``value``; returns it in canonical form."""
        slot = self._slot(value)
        if not self._pool.take(slot):
            raise AlreadyAllocated(f"provided {self.NOUN} is already allocated")
        return self._value(slot)

    def allocate_next(self) -> str:
        """Allocate the lowest free value."""
        slot = self._pool.take_lowest()
        if slot is None:
            raise RangeFull("range is full")
        return self._value(slot)

    def release(self, value: str) -> bool:
        """Give ``value`` back; False when it was not allocated (or not ours)."""
        try:
            return self._pool.give_back(self._slot(value))
        except NotInRange:
            return False

    def rebuild(self, in_use: Iterable[str]) -> RebuildResult:
        """Forget everything, then allocate each value of ``in_use`` in the given order.

        The first holder of a value keeps it; later duplicates and values
        outside the range are reported, not allocated.
        """
        self._pool.clear()
        kept: list[str] = []
        dups: list[str] = []
        outside: list[str] = []
        for value in in_use:
            try:
                kept.append(self.allocate(value))
            except AlreadyAllocated:
                dups.append(value)
            except NotInRange:
                outside.append(value)
        return RebuildResult(tuple(kept), tuple(dups), tuple(outside))


class IPRange(_SlotRange):
    """Single addresses from one CIDR (ClusterIPs, pod IPs).

    Reserved addresses are never handed out, and requesting one is "not in
    the valid range". The constructors below say which addresses each use
    reserves.
    """

    NOUN = "IP"

    def __init__(self, cidr: str, *, reserved: Iterable[str] = ()) -> None:
        self.network: IPNetwork = parse_network(cidr)
        self.cidr = str(self.network)
        base = int(self.network.network_address)
        offsets = []
        for r in reserved:
            addr = parse_address(r)
            if addr in self.network:
                offsets.append(int(addr) - base)
        self._base = base
        self._pool = SlotPool(self.network.num_addresses, offsets)

    @classmethod
    def for_services(cls, cidr: str) -> IPRange:
        """A service network: the network and broadcast addresses are reserved
        (as Kubernetes does), unless the range is a /31 or /32 (IPv6 /127, /128),
        which have no such addresses."""
        net = parse_network(cidr, what="service network")
        reserved: list[str] = []
        if net.num_addresses > 2:
            reserved.append(str(net.network_address))
            if net.version == 4:
                reserved.append(str(net.broadcast_address))
        return cls(cidr, reserved=reserved)

    @classmethod
    def for_pods(cls, subnet: str) -> IPRange:
        """A node's pod subnet: network address, gateway (first host, ``.1``) and
        broadcast are reserved, as OpenShift SDN does with tun0's address."""
        net = parse_network(subnet, what="host subnet")
        reserved: list[str] = []
        if net.num_addresses > 2:
            reserved.append(str(net.network_address))
            reserved.append(str(net.network_address + 1))
            if net.version == 4:
                reserved.append(str(net.broadcast_address))
        return cls(subnet, reserved=reserved)

    # ----------------------------------------------------------- queries

    def reserved(self) -> list[str]:
        return [self._value(s) for s in sorted(self._pool.reserved)]

    def _value(self, slot: int) -> str:
        return str(ipaddress.ip_address(self._base + slot))

    def _slot(self, ip: str) -> int:
        """The slot of ``ip``; NotInRange when outside the CIDR or reserved."""
        try:
            addr = ipaddress.ip_address(ip.strip())
        except ValueError:
            raise NotInRange(f'"{ip}" is not a valid IP address') from None
        if addr.version != self.network.version or addr not in self.network:
            raise NotInRange(self._range_message())
        slot = int(addr) - self._base
        if slot in self._pool.reserved:
            raise NotInRange(self._range_message())
        return slot

    def _range_message(self) -> str:
        return f"provided IP is not in the valid range. The range of valid IPs is {self.cidr}"

    def check(self, ip: str) -> None:
        """Raise what :meth:`allocate` would raise, without allocating."""
        if self._pool.is_used(self._slot(ip)):
            raise AlreadyAllocated("provided IP is already allocated")


class SubnetRange(_SlotRange):
    """Equal-sized subnets of one cluster network (node subnets).

    ``host_bits`` is OpenShift's ``hostsubnetlength``: the number of host bits
    of each subnet, so a /16 with ``host_bits=8`` yields 256 /24 subnets.
    """

    NOUN = "subnet"

    def __init__(self, cidr: str, host_bits: int) -> None:
        self.network: IPNetwork = parse_network(cidr, what="cluster network")
        self.cidr = str(self.network)
        total_host_bits = self.network.max_prefixlen - self.network.prefixlen
        if not 0 < host_bits <= total_host_bits:
            raise AllocationError(
                f"host subnet length {host_bits} does not fit cluster network {self.cidr}: "
                f"it must be between 1 and {total_host_bits}"
            )
        self.host_bits = host_bits
        self.prefixlen = self.network.max_prefixlen - host_bits
        self._base = int(self.network.network_address)
        self._pool = SlotPool(1 << (total_host_bits - host_bits))

    def _value(self, slot: int) -> str:
        addr = ipaddress.ip_address(self._base + (slot << self.host_bits))
        return f"{addr}/{self.prefixlen}"

    def _slot(self, subnet: str) -> int:
        try:
            net = ipaddress.ip_network(subnet.strip(), strict=True)
        except ValueError:
            raise NotInRange(f'"{subnet}" is not a valid subnet') from None
        if (
            net.version != self.network.version
            or net.prefixlen != self.prefixlen
            or not net.subnet_of(self.network)  # type: ignore[arg-type]
        ):
            raise NotInRange(
                f"provided subnet is not in the valid range. The range of valid subnets is "
                f"/{self.prefixlen} subnets of {self.cidr}"
            )
        return (int(net.network_address) - self._base) >> self.host_bits

    def __iter__(self) -> Iterator[str]:
        """Every subnet of the range, allocated or not, in order."""
        return (self._value(s) for s in range(self._pool.size))
