"""The bisection that finds the routes HAProxy refuses: right answer, bounded checks.

``check`` here is a rule over route sets standing in for "render these and run
``haproxy -c``" (the live version is tests/integration/router/test_refused_routes.py).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Sequence

import pytest

from shiftnet.router.haproxy.isolation import find_refused


def _checker(bad: Callable[[set[int]], str | None]) -> Callable[[Sequence[int]], object]:
    async def check(keys: Sequence[int]) -> str | None:
        return bad(set(keys))

    return check


def _run(keys: list[int], bad: Callable[[set[int]], str | None], likely: Sequence[int] = ()):  # type: ignore[no-untyped-def]
    return asyncio.run(find_refused(keys, _checker(bad), likely=likely))  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_finds_exactly_the_refused_routes_in_k_log_n_checks(n: int, k: int) -> None:
    rng = random.Random(n * 10 + k)
    keys = list(range(n))
    culprits = set(rng.sample(keys, min(k, n)))
    found, checks = _run(keys, lambda s: f"bad {min(s & culprits)}" if s & culprits else None)
    assert set(found) == culprits
    assert all(found[c] == f"bad {c}" for c in culprits)  # each with its own reason
    bound = 2 + 2 * len(culprits) * max(1, math.ceil(math.log2(n)))
    assert checks <= bound, (checks, bound)


def test_routes_that_fail_only_together_lose_one_of_the_pair() -> None:
    keys = list(range(64))
    found, _ = _run(keys, lambda s: "conflict" if {10, 50} <= s else None)
    assert len(found) == 1 and set(found) <= {10, 50}


def test_what_is_left_passes_as_a_whole() -> None:
    rng = random.Random(7)
    keys = list(range(200))
    pairs = [set(rng.sample(keys, 2)) for _ in range(5)]
    singles = set(rng.sample(keys, 4))

    def bad(s: set[int]) -> str | None:
        return "x" if s & singles or any(p <= s for p in pairs) else None

    found, _ = _run(keys, bad)
    assert bad(set(keys) - set(found)) is None
    assert singles <= set(found)


def test_no_route_is_blamed_when_the_empty_configuration_fails() -> None:
    found, checks = _run(list(range(10)), lambda s: "global section broken")
    assert found == {} and checks == 2  # the whole set, then no route at all


def test_a_passing_set_costs_one_check() -> None:
    assert _run(list(range(50)), lambda s: None) == ({}, 1)


def test_likely_routes_are_searched_first() -> None:
    keys = list(range(10_000))
    found, checks = _run(keys, lambda s: "bad" if 9_999 in s else None, likely=[5, 9_999])
    assert found == {9_999: "bad"}
    assert checks <= 4  # the rest alone, all, then each likely half
    # A wrong guess costs one check more, then the whole search.
    found, _ = _run(keys, lambda s: "bad" if 17 in s else None, likely=[5])
    assert found == {17: "bad"}
