"""The user-space proxy's relay budget: a counter against a limit, refusals counted,
a default that leaves three quarters of the descriptors to the rest of the process."""

from __future__ import annotations

import pytest

from shiftnet.errors import ConfigError
from shiftnet.proxy.relay_budget import RelayBudget, default_relay_limit
from shiftnet.proxy.service import ProxyConfig, parse_max_relays


@pytest.mark.parametrize(
    ("descriptors", "relays"), [(20_000, 5_000), (1024, 256), (256, 64), (100, 64), (0, 64)]
)
def test_default_limit_is_a_quarter_of_the_descriptors_with_a_floor(
    descriptors: int, relays: int
) -> None:
    assert default_relay_limit(descriptors) == relays


def test_take_until_spent_then_refuse_and_count() -> None:
    budget = RelayBudget(limit=2)
    assert budget.take() and budget.take()
    assert not budget.take()
    assert not budget.take()
    assert (budget.used, budget.refused) == (2, 2)
    budget.give()
    assert budget.take()
    budget.give()
    budget.give()
    budget.give()  # more gives than takes never go below zero
    assert budget.used == 0


def test_refusals_are_told_at_most_once_per_period() -> None:
    budget = RelayBudget(limit=1)
    assert budget.time_to_tell(100.0)
    assert not budget.time_to_tell(105.0)
    assert budget.time_to_tell(110.0)


def test_max_relays_from_the_environment() -> None:
    config = ProxyConfig.from_env({"SHIFTNET_PROXY_MAX_RELAYS": "500"})
    assert config.userspace.max_relays == 500
    assert ProxyConfig.from_env({}).userspace.max_relays is None


@pytest.mark.parametrize("value", ["0", "-3", "many", "1.5"])
def test_a_bad_max_relays_is_one_sentence_naming_the_setting(value: str) -> None:
    with pytest.raises(ConfigError, match=r"SHIFTNET_PROXY_MAX_RELAYS \(--max-relays\) must be"):
        parse_max_relays(value)
