"""The pod IP index depends only on each pod's last event, whatever the interleaving."""

from __future__ import annotations

import ipaddress
import random

import dns.name
import dns.rcode
import dns.rdatatype as T

from shiftnet.api import Pod
from shiftnet.dns.podindex import PodIPIndex
from shiftnet.dns.zone import ZoneConfig, build_zone

VERIFIED = ZoneConfig(pod_mode="verified")


def pod(name: str, ns: str, ip: str | None, *, terminating: bool = False) -> Pod:
    meta: dict[str, object] = {"name": name, "namespace": ns}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return Pod.model_validate(
        {
            "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", **({"podIP": ip} if ip else {})},
        }
    )


# Each pod's own history, in order: (old, new) as the informer hands them over.
def histories() -> dict[str, list[tuple[Pod | None, Pod | None]]]:
    a1, a2 = pod("a", "shop", "10.1.0.5"), pod("a", "shop", "10.1.0.6")
    b0, b1 = pod("b", "shop", None), pod("b", "shop", "10.1.0.5")  # takes a's first IP
    c1, c2 = pod("c", "solo", "10.1.0.9"), pod("c", "solo", "10.1.0.9", terminating=True)
    d1 = pod("d", "other", "10.1.0.5")  # the same IP in another namespace
    e1, e2 = pod("e", "gone", "fd00::7"), pod("e", "gone", "fd00::8")
    f1 = pod("f", "shop", "10.1.0.6")  # shares a's last IP (a restarted pod's overlap)
    g1 = pod("g", "shop", "not-an-ip")
    return {
        "a": [(None, a1), (a1, a2)],
        "b": [(None, b0), (b0, b1)],
        "c": [(None, c1), (c1, c2)],
        "d": [(None, d1), (d1, None), (None, d1)],
        "e": [(None, e1), (e1, e2), (e2, None)],
        "f": [(None, f1), (f1, None)],
        "g": [(None, g1)],
    }


def final_pods() -> list[Pod]:
    out = []
    for events in histories().values():
        last = events[-1][1]
        if last is not None:
            out.append(last)
    return out


def interleaving(rng: random.Random) -> list[tuple[Pod | None, Pod | None]]:
    """Every pod's events in its own order, pods mixed at random, some delivered twice."""
    queues = {k: list(v) for k, v in histories().items()}
    out: list[tuple[Pod | None, Pod | None]] = []
    while queues:
        key = rng.choice(sorted(queues))
        event = queues[key].pop(0)
        out.append(event)
        if rng.random() < 0.2:
            out.append(event)  # a handler that sees an event again (a relist racing it)
        if not queues[key]:
            del queues[key]
    return out


def test_any_interleaving_gives_the_index_of_the_final_pods() -> None:
    expected = PodIPIndex()
    expected.reset(final_pods())
    want = {
        ("shop", ipaddress.ip_address("10.1.0.6")),
        ("shop", ipaddress.ip_address("10.1.0.5")),
        ("other", ipaddress.ip_address("10.1.0.5")),
    }
    assert expected.snapshot() == want
    assert expected.namespaces() == {"shop", "other"}
    rng = random.Random(18)
    for _ in range(300):
        index = PodIPIndex()
        for old, new in interleaving(rng):
            index.changed(old, new)
        assert index.snapshot() == expected.snapshot()
        assert index.namespaces() == expected.namespaces()
        assert len(index) == len(expected)


def test_an_ip_stays_while_any_pod_of_the_namespace_holds_it() -> None:
    index = PodIPIndex()
    a, f = pod("a", "shop", "10.1.0.6"), pod("f", "shop", "10.1.0.6")
    assert index.changed(None, a) is True  # shop gains its first pod
    assert index.changed(None, f) is False
    assert index.changed(a, None) is False
    assert index.snapshot() == {("shop", ipaddress.ip_address("10.1.0.6"))}
    assert index.changed(f, None) is True  # shop's last pod
    assert index.snapshot() == frozenset()


def test_a_zone_given_new_pods_answers_as_one_built_with_them() -> None:
    questions = [
        f"{label}.{ns}.pod.cluster.local."
        for label in ("10-1-0-5", "10-1-0-6", "10-1-0-9", "fd00--7", "fd00--8")
        for ns in ("shop", "other", "solo", "gone")
    ]
    index = PodIPIndex()
    index.reset([pod("x", "shop", "10.1.0.99")])
    namespaces = ["shop", "other", "solo", "gone"]
    first = build_zone([], [], VERIFIED, namespaces=namespaces, pods=index.snapshot())
    for old, new in interleaving(random.Random(7)):
        index.changed(old, new)
    index.changed(pod("x", "shop", "10.1.0.99"), None)
    updated = first.with_pods(index.snapshot())
    built = build_zone([], [], VERIFIED, namespaces=namespaces, pods=index.snapshot())
    for q in questions:
        for rdtype in (T.A, T.AAAA):
            got = updated.resolve(dns.name.from_text(q), rdtype)
            want = built.resolve(dns.name.from_text(q), rdtype)
            assert got is not None and want is not None
            assert (got.rcode, got.answer) == (want.rcode, want.answer), q
    # the old zone still answers its own pods: an answer never mixes two states
    old = first.resolve(dns.name.from_text("10-1-0-99.shop.pod.cluster.local."), T.A)
    assert old is not None and old.rcode == dns.rcode.NOERROR and old.answer
    new = updated.resolve(dns.name.from_text("10-1-0-99.shop.pod.cluster.local."), T.A)
    assert new is not None and new.rcode == dns.rcode.NXDOMAIN
