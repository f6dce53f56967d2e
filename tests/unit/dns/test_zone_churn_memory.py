"""Building zones while Services with new names come and go keeps no memory per name.

A long-running DNS server sees every Service name that ever existed; whatever
the zone code memoises per name must stay bounded by what is alive (or a small
cap), not grow with history.
"""

from __future__ import annotations

import gc
import tracemalloc

from tests.support.dns import endpoints, service

from shiftnet.dns.zone import ZoneConfig, build_zone

CFG = ZoneConfig()
ALIVE = 3
WARM_ROUNDS = 1500  # past every per-name cap of the zone code
MEASURED_ROUNDS = 1000
ALLOWED_GROWTH = 64 * 1024  # bytes; unbounded memos grow by about 200 bytes a round


def churn(rounds: int, start: int) -> None:
    for i in range(start, start + rounds):
        names = [f"churn-svc-{n}" for n in range(i, i + ALIVE)]
        ports = [{"name": "http", "port": 80}]
        svcs = [service(n, "soak", f"127.30.0.{k + 1}", ports) for k, n in enumerate(names)]
        eps = [
            endpoints(n, "soak", [{"ip": "127.10.0.2"}], ports=[{"name": "http", "port": 8080}])
            for n in names
        ]
        zone = build_zone(svcs, eps, CFG, serial=i)
        assert zone is not None
        del zone, svcs, eps


def test_zone_memory_is_flat_under_service_name_churn() -> None:
    tracemalloc.start()
    try:
        churn(WARM_ROUNDS, 0)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        churn(MEASURED_ROUNDS, WARM_ROUNDS)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < ALLOWED_GROWTH, f"{grown} bytes kept after {MEASURED_ROUNDS} rounds of churn"
