"""Round robin, ClientIP affinity with expiry, retry ignoring affinity."""

from __future__ import annotations

from collections import Counter

from shiftnet.proxy.balancer import Balancer
from shiftnet.proxy.model import Backend

B = [Backend("10.1.0.1", 80), Backend("10.1.0.2", 80), Backend("10.1.0.3", 80)]


def test_round_robin_is_exact() -> None:
    lb = Balancer(B)
    counts = Counter(lb.pick("c", 0) for _ in range(900))
    assert counts == {b: 300 for b in B}


def test_affinity_sticks_until_timeout() -> None:
    lb = Balancer(B, affinity=True, timeout=10)
    first = lb.pick("c1", 0)
    assert all(lb.pick("c1", t) == first for t in range(1, 50, 5))  # refreshed on use
    assert lb.pick("c1", 100) != first or len(B) == 1  # expired: next in rotation


def test_retry_moves_client_and_skips_failed() -> None:
    lb = Balancer(B, affinity=True, timeout=10)
    first = lb.pick("c1", 0)
    nxt = lb.retry("c1", first, 1)
    assert nxt != first and lb.pick("c1", 2) == nxt


def test_update_keeps_affinity_to_remaining_endpoints() -> None:
    lb = Balancer(B, affinity=True, timeout=10)
    pinned = {c: lb.pick(c, 0) for c in ("a", "b", "c")}
    lb.update(B[:2], True, 10)
    for client, backend in pinned.items():
        if backend in B[:2]:
            assert lb.pick(client, 1) == backend
        else:
            assert lb.pick(client, 1) in B[:2]


def test_no_backends() -> None:
    assert Balancer([]).pick("c", 0) is None
