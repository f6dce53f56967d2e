"""``--event-ttl`` / SHIFTNET_EVENT_TTL: Go-style durations, one clear error otherwise."""

from __future__ import annotations

import pytest

from shiftnet.errors import ConfigError
from shiftnet.master import MasterConfig


@pytest.mark.parametrize(
    ("text", "seconds"), [("1h", 3600.0), ("30m", 1800.0), ("90", 90.0), ("1m30s", 90.0)]
)
def test_event_ttl_reads_durations(text: str, seconds: float) -> None:
    assert MasterConfig.build(event_ttl=text).event_ttl == seconds


def test_event_ttl_defaults_to_one_hour() -> None:
    assert MasterConfig.build().event_ttl == 3600.0


@pytest.mark.parametrize("text", ["0", "soon", "-5m", "1y"])
def test_a_bad_event_ttl_is_one_sentence(text: str) -> None:
    with pytest.raises(ConfigError, match=f'event TTL "{text}" is invalid'):
        MasterConfig.build(event_ttl=text)
