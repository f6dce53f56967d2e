"""Pure tests of shiftnet.ipam: address and subnet pools."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftnet.errors import AllocationError
from shiftnet.ipam import (
    AlreadyAllocated,
    IPRange,
    NotInRange,
    RangeFull,
    SlotPool,
    SubnetRange,
)

# ------------------------------------------------------------------ IPRange


def test_service_range_skips_network_and_broadcast() -> None:
    r = IPRange.for_services("172.30.0.0/29")
    assert r.capacity == 6
    assert r.reserved() == ["172.30.0.0", "172.30.0.7"]
    got = [r.allocate_next() for _ in range(6)]
    assert got == [f"172.30.0.{i}" for i in range(1, 7)]
    with pytest.raises(RangeFull, match=r"^range is full$"):
        r.allocate_next()


def test_pod_range_reserves_gateway() -> None:
    r = IPRange.for_pods("127.10.3.0/24")
    assert r.reserved() == ["127.10.3.0", "127.10.3.1", "127.10.3.255"]
    assert r.allocate_next() == "127.10.3.2"
    assert r.capacity == 253


def test_tiny_ranges_reserve_nothing() -> None:
    assert IPRange.for_services("10.0.0.4/31").capacity == 2
    assert IPRange.for_services("10.0.0.4/32").allocate_next() == "10.0.0.4"


def test_specific_allocation_and_errors_in_kubernetes_words() -> None:
    r = IPRange.for_services("127.30.0.0/16")
    assert r.allocate("127.30.4.5") == "127.30.4.5"
    with pytest.raises(AlreadyAllocated, match=r"^provided IP is already allocated$"):
        r.allocate("127.30.4.5")
    msg = "provided IP is not in the valid range. The range of valid IPs is 127.30.0.0/16"
    with pytest.raises(NotInRange) as exc:
        r.allocate("10.0.0.1")
    assert str(exc.value) == msg
    # reserved addresses are "not in the valid range" too
    with pytest.raises(NotInRange):
        r.allocate("127.30.0.0")
    with pytest.raises(NotInRange):
        r.allocate("127.30.255.255")
    with pytest.raises(NotInRange, match="not a valid IP"):
        r.allocate("banana")
    # all of them are AllocationError, the typed family the CLI prints
    assert issubclass(NotInRange, AllocationError)


def test_check_does_not_allocate() -> None:
    r = IPRange.for_services("172.30.0.0/24")
    r.check("172.30.0.9")
    assert not r.is_allocated("172.30.0.9")
    r.allocate("172.30.0.9")
    with pytest.raises(AlreadyAllocated):
        r.check("172.30.0.9")


def test_lowest_free_after_release_and_specific() -> None:
    r = IPRange.for_services("10.0.0.0/24")
    a = [r.allocate_next() for _ in range(5)]  # .1 - .5
    assert a[-1] == "10.0.0.5"
    assert r.release("10.0.0.3")
    assert not r.release("10.0.0.3")
    r.allocate("10.0.0.6")  # above the mark
    assert r.allocate_next() == "10.0.0.3"
    assert r.allocate_next() == "10.0.0.7"  # .6 is taken
    r.release("10.0.0.2")
    r.allocate("10.0.0.2")  # taken back specifically: heap entry is stale
    assert r.allocate_next() == "10.0.0.8"


def test_rebuild_first_holder_wins() -> None:
    r = IPRange.for_services("10.0.0.0/24")
    r.allocate_next()
    res = r.rebuild(["10.0.0.9", "10.0.0.9", "192.168.0.1", "10.0.0.1"])
    assert res.kept == ("10.0.0.9", "10.0.0.1")
    assert res.duplicates == ("10.0.0.9",)
    assert res.out_of_range == ("192.168.0.1",)
    assert r.allocated() == ["10.0.0.1", "10.0.0.9"]
    assert r.allocate_next() == "10.0.0.2"


def test_ipv6_range() -> None:
    r = IPRange.for_services("fd00::/120")
    assert r.allocate_next() == "fd00::1"
    with pytest.raises(NotInRange):
        r.allocate("10.0.0.1")


def test_invalid_cidr_is_one_sentence() -> None:
    with pytest.raises(AllocationError, match=r"service network \"10\.0\.0\.1/24\" is not a valid"):
        IPRange.for_services("10.0.0.1/24")


# ------------------------------------------------------------------ SubnetRange


def test_default_sdn_network_has_256_slash_24() -> None:
    s = SubnetRange("10.1.0.0/16", 8)
    assert s.capacity == 256
    assert s.allocate_next() == "10.1.0.0/24"
    assert s.allocate_next() == "10.1.1.0/24"
    assert s.allocate("10.1.7.0/24") == "10.1.7.0/24"
    with pytest.raises(AlreadyAllocated, match="already allocated"):
        s.allocate("10.1.7.0/24")
    with pytest.raises(NotInRange, match=r"/24 subnets of 10\.1\.0\.0/16"):
        s.allocate("10.1.7.0/25")
    with pytest.raises(NotInRange):
        s.allocate("10.2.0.0/24")
    assert s.release("10.1.0.0/24")
    assert s.allocate_next() == "10.1.0.0/24"


def test_local_network_and_full() -> None:
    s = SubnetRange("127.10.0.0/23", 8)
    assert list(s) == ["127.10.0.0/24", "127.10.1.0/24"]
    s.allocate_next()
    s.allocate_next()
    with pytest.raises(RangeFull, match=r"^range is full$"):
        s.allocate_next()


@pytest.mark.parametrize("bits", [0, 17, -1])
def test_host_bits_must_fit(bits: int) -> None:
    with pytest.raises(AllocationError, match="host subnet length"):
        SubnetRange("10.1.0.0/16", bits)


# ------------------------------------------------------------------ properties

ops = st.lists(
    st.one_of(
        st.tuples(st.just("next"), st.just(0)),
        st.tuples(st.just("take"), st.integers(0, 40)),
        st.tuples(st.just("release"), st.integers(0, 40)),
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(ops, st.sets(st.integers(0, 31), max_size=5))
def test_pool_never_double_allocates_and_picks_lowest(
    steps: list[tuple[str, int]], reserved: set[int]
) -> None:
    size = 32
    pool = SlotPool(size, reserved)
    held: set[int] = set()
    for op, arg in steps:
        if op == "next":
            got = pool.take_lowest()
            free = sorted(set(range(size)) - held - reserved)
            if not free:
                assert got is None
            else:
                assert got == free[0]  # lowest free, never a held or reserved one
                held.add(got)
        elif op == "take":
            ok = pool.take(arg)
            assert ok == (arg < size and arg not in held and arg not in reserved)
            if ok:
                held.add(arg)
        else:
            assert pool.give_back(arg) == (arg in held)
            held.discard(arg)
        assert set(pool.used_slots()) == held
        assert pool.free == size - len(reserved) - len(held)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=120), st.randoms(use_true_random=False))
def test_iprange_allocations_are_distinct(actions: list[bool], rnd: object) -> None:
    import random

    assert isinstance(rnd, random.Random)
    r = IPRange.for_services("127.30.0.0/26")
    live: list[str] = []
    for alloc in actions:
        if alloc or not live:
            try:
                ip = r.allocate_next()
            except RangeFull:
                assert len(live) == r.capacity
                continue
            assert ip not in live
            live.append(ip)
        else:
            ip = live.pop(rnd.randrange(len(live)))
            assert r.release(ip)
    assert sorted(live, key=lambda s: tuple(int(p) for p in s.split("."))) == r.allocated()
