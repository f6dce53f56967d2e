"""TCPSlots: at the limit the longest idle connection makes room; busy ones are kept."""

from __future__ import annotations

from shiftnet.dns.tcp_slots import TCPSlots


def test_admits_up_to_the_limit_then_evicts_the_longest_idle() -> None:
    slots: TCPSlots[str] = TCPSlots(3)
    assert [slots.admit(c) for c in "abc"] == [(True, None)] * 3
    assert slots.admit("d") == (True, "a")
    assert slots.admit("e") == (True, "b")
    assert len(slots) == 3 and not slots.holds("a") and slots.holds("e")


def test_activity_makes_a_connection_the_most_recently_idle() -> None:
    slots: TCPSlots[str] = TCPSlots(3)
    for c in "abc":
        slots.admit(c)
    slots.busy("a")
    slots.idle("a")  # a answered a query after b and c went idle
    assert slots.admit("d") == (True, "b")
    assert slots.admit("e") == (True, "c")
    assert slots.admit("f") == (True, "a")


def test_busy_connections_are_never_evicted() -> None:
    slots: TCPSlots[str] = TCPSlots(2)
    slots.admit("a")
    slots.admit("b")
    slots.busy("a")
    assert slots.admit("c") == (True, "b")
    slots.busy("c")
    assert slots.admit("d") == (False, None)  # every slot is answering: refuse the newcomer
    assert len(slots) == 2


def test_released_connections_free_their_slot() -> None:
    slots: TCPSlots[str] = TCPSlots(1)
    slots.admit("a")
    slots.busy("a")
    slots.release("a")
    slots.idle("a")  # a late idle() of a released connection does not bring it back
    assert not slots.holds("a") and len(slots) == 0
    assert slots.admit("b") == (True, None)
