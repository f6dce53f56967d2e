"""Random and mutated DNS packets, reproducible from a seed (for the fuzz tests)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import dns.edns
import dns.flags
import dns.message
import dns.rdatatype

SEED_NAMES = [
    "web.default.svc.cluster.local",
    "_http._tcp.web.default.svc.cluster.local",
    "db.default.svc.cluster.local",
    "db-0.db.default.svc.cluster.local",
    "10.0.30.127.in-addr.arpa",
    "dns-version.cluster.local",
    "nope.default.svc.cluster.local",
    "cluster.local",
    "example.com",
    # pod records (verified by the fuzz server's Pod), the namespace and pod apexes
    "10-3-0-55.default.pod.cluster.local",
    "fd00-3--56.default.pod.cluster.local",
    "default.pod.cluster.local",
    # kube-dns wildcards (the fuzz server turns them on)
    "*.default.svc.cluster.local",
    "*.*.db.default.svc.cluster.local",
    # an ExternalName and a dual-stack service
    "ext.default.svc.cluster.local",
    "dual.default.svc.cluster.local",
    # the cluster network's reverse zone: its apex, an endpoint's PTR, a name without one
    "3.10.in-addr.arpa",
    "55.0.3.10.in-addr.arpa",
    "99.0.3.10.in-addr.arpa",
    # IPv6: an endpoint name in the compressed form, a ClusterIP's and a pod's PTRs
    "fd00-3--56.v6.default.svc.cluster.local",
    "0.3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.0.d.f.ip6.arpa",
    "6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.3.0.0.0.0.0.d.f.ip6.arpa",
]
# Seed names the fuzz server holds no data for, on purpose.
UNKNOWN_SEED_NAMES = {"nope.default.svc.cluster.local", "example.com", "99.0.3.10.in-addr.arpa"}
SEED_TYPES = ["A", "AAAA", "SRV", "PTR", "TXT", "SOA", "NS", "ANY", "CNAME", "MX", "AXFR"]


def seed_packets() -> list[bytes]:
    """Valid queries of every shape the server knows: plain, EDNS, cookies, odd flags."""
    out = []
    for name in SEED_NAMES:
        for rdtype in SEED_TYPES:
            t = dns.rdatatype.from_text(rdtype)
            out.append(dns.message.make_query(name, t).to_wire())
            q = dns.message.make_query(name, t, use_edns=0, payload=4096, want_dnssec=True)
            q.use_edns(0, dns.flags.DO, 4096, options=[dns.edns.GenericOption(10, b"c" * 8)])
            out.append(q.to_wire())
    return out


def _mutate(rng: random.Random, pkt: bytes) -> bytes:
    data = bytearray(pkt)
    op = rng.randrange(8)
    if op == 0 and data:  # flip bits
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif op == 1:  # truncate
        del data[rng.randrange(len(data) + 1) :]
    elif op == 2:  # random bytes at random places
        for _ in range(rng.randint(1, 6)):
            data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
    elif op == 3 and len(data) >= 12:  # lie about section counts
        i = rng.choice([4, 6, 8, 10])
        data[i : i + 2] = rng.randrange(65536).to_bytes(2, "big")
    elif op == 4 and len(data) > 13:  # compression pointers into anywhere (loops included)
        i = rng.randrange(12, len(data) - 1)
        data[i] = 0xC0 | rng.randrange(64)
        data[i + 1] = rng.randrange(256)
    elif op == 5:  # trailing junk
        data += rng.randbytes(rng.randint(1, 64))
    elif op == 6 and len(data) >= 4:  # random header flags and opcode
        data[2] = rng.randrange(256)
        data[3] = rng.randrange(256)
    else:  # label lengths pointing past the end
        if len(data) > 12:
            data[12] = rng.randrange(256)
    return bytes(data)


def packets(count: int, seed: int = 1) -> Iterator[bytes]:
    """``count`` packets: a quarter pure noise, the rest mutated valid queries.

    Some are oversized (up to 4 KiB of junk after a valid query).
    """
    rng = random.Random(seed)
    seeds = seed_packets()
    for i in range(count):
        kind = i % 4
        if kind == 0:
            yield rng.randbytes(rng.choice([0, 1, 11, 12, 13, rng.randrange(600)]))
        elif kind == 3 and i % 100 == 3:
            yield rng.choice(seeds) + rng.randbytes(rng.randrange(512, 4096))
        else:
            pkt = rng.choice(seeds)
            for _ in range(rng.randint(1, 3)):
                pkt = _mutate(rng, pkt)
            yield pkt
