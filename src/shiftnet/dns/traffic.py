"""Per-query counts for CoreDNS's metric names, kept as plain integers on the hot path.

Why plain integers read from the wire: a query answered from the memo costs
about a microsecond, and a Prometheus client's locks and label lookups would
cost more than the answer. The query type is read from the question's bytes
and the rcode from the reply's header, without parsing either message; the
collector (``metrics.py``) turns these tables into series at scrape time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict

# CoreDNS's buckets: durations 0.25 ms doubling 16 times; sizes in bytes.
DURATION_BUCKETS = tuple(0.00025 * 2**i for i in range(16))
SIZE_BUCKETS = (0.0, 100.0, 200.0, 300.0, 400.0, 511.0, 1023.0, 2047.0, 4095.0, 8291.0,
                16e3, 32e3, 48e3, 64e3)  # fmt: skip

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
# The types CoreDNS names in its labels; any other is "other", as there.
QTYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA",
          33: "SRV", 35: "NAPTR", 39: "DNAME", 41: "OPT", 43: "DS", 46: "RRSIG", 47: "NSEC",
          48: "DNSKEY", 50: "NSEC3", 51: "NSEC3PARAM", 64: "SVCB", 65: "HTTPS", 251: "IXFR",
          252: "AXFR", 255: "ANY"}  # fmt: skip


_PLAIN = b"\x00\x01\x00\x00\x00\x00\x00\x00"  # QD 1, AN 0, NS 0, AR 0
_EDNS = b"\x00\x01\x00\x00\x00\x00\x00\x01"  # QD 1, AR 1


def query_type(data: bytes) -> str:
    """The first question's type name, read past the name's labels ("other" if unreadable).

    The two common shapes (one question, alone or followed by an OPT record
    without options) are read from the end without walking the name."""
    counts = data[4:12]
    if counts == _PLAIN and len(data) > 17:
        return QTYPES.get(int.from_bytes(data[-4:-2], "big"), "other")
    if (
        counts == _EDNS
        and len(data) > 28
        and data[-11:-8] == b"\x00\x00\x29"
        and data[-2:] == b"\x00\x00"
    ):
        return QTYPES.get(int.from_bytes(data[-15:-13], "big"), "other")
    at = 12
    end = len(data)
    while at < end:
        length = data[at]
        if length == 0:
            break
        if length & 0xC0:
            return "other"  # a pointer cannot appear in a query's first name
        at += length + 1
    if at + 3 > end:
        return "other"
    return QTYPES.get(int.from_bytes(data[at + 1 : at + 3], "big"), "other")


# Question types by their two bytes on the wire, for the common shapes' fast path.
_QTYPE_BYTES = {code.to_bytes(2, "big"): name for code, name in QTYPES.items()}
# Size bucket of every message length up to 4 KiB (larger ones: bisect), so that
# counting a size is one index instead of a search.
_SIZE_INDEX = bytes(bisect_left(SIZE_BUCKETS, n) for n in range(4097))
_FIRST_DURATION = DURATION_BUCKETS[0]


class Histogram:
    """Bucket counts, a sum and a count (cumulated when exported)."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    @property
    def count(self) -> int:
        """How many values were observed (summed when asked: one add less per query)."""
        return sum(self.counts)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        running = 0
        out: list[tuple[str, float]] = []
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, float(running)))
        return out


class Traffic:
    """What the server saw: requests by (proto, family, type), responses by rcode, sizes.

    :meth:`request` and :meth:`response` run for every query, so each does its
    counting inline (no call per histogram, sizes bucketed by a table, the
    type read from the question's last bytes in the common shapes): together
    they cost a fraction of what a memoised answer does."""

    __slots__ = ("durations", "request_sizes", "requests", "response_sizes", "responses")

    def __init__(self) -> None:
        self.requests: defaultdict[tuple[str, str, str], int] = defaultdict(int)
        self.responses: defaultdict[str, int] = defaultdict(int)
        self.durations: dict[str, Histogram] = {}
        self.request_sizes: dict[str, Histogram] = {}
        self.response_sizes: dict[str, Histogram] = {}

    def request(self, data: bytes, proto: str, family: str) -> str:
        """Count a query; returns its type name for :meth:`response`."""
        n = len(data)
        if n > 17 and data[4:12] == _PLAIN:
            qtype = _QTYPE_BYTES.get(data[-4:-2], "other")
        else:
            qtype = query_type(data)
        self.requests[(proto, family, qtype)] += 1
        sizes = self.request_sizes.get(proto)
        if sizes is None:
            sizes = self.request_sizes[proto] = Histogram(SIZE_BUCKETS)
        sizes.counts[_SIZE_INDEX[n] if n <= 4096 else bisect_left(SIZE_BUCKETS, n)] += 1
        sizes.total += n
        return qtype

    def response(self, reply: bytes, proto: str, qtype: str, seconds: float) -> None:
        """Count an answer sent: its rcode, its size and how long the query took."""
        n = len(reply)
        rcode = reply[3] & 0x0F if n > 3 else 2
        self.responses[RCODES.get(rcode) or str(rcode)] += 1
        durations = self.durations.get(qtype)
        if durations is None:
            durations = self.durations[qtype] = Histogram(DURATION_BUCKETS)
        durations.counts[
            0 if seconds <= _FIRST_DURATION else bisect_left(DURATION_BUCKETS, seconds)
        ] += 1
        durations.total += seconds
        sizes = self.response_sizes.get(proto)
        if sizes is None:
            sizes = self.response_sizes[proto] = Histogram(SIZE_BUCKETS)
        sizes.counts[_SIZE_INDEX[n] if n <= 4096 else bisect_left(SIZE_BUCKETS, n)] += 1
        sizes.total += n
