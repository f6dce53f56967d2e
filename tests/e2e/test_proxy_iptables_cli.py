"""`shiftnet proxy` iptables flags as a user meets them: a bad period or backend is one
sentence naming the flag (or field) and exit 1, before anything is touched."""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.test_proxy_cli import shiftnet


def test_bad_iptables_periods_are_one_sentence(tmp_path: Path) -> None:
    res = shiftnet(tmp_path, "proxy", "--mode", "iptables", "--iptables-sync-period", "soon")
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip() == (
        "error: --iptables-sync-period must be a number of seconds (0 or more), not 'soon'"
    )
    env = {**os.environ, "SHIFTNET_PROXY_IPTABLES_MIN_SYNC_PERIOD": "-1"}
    res = shiftnet(tmp_path, "proxy", "--mode", "iptables", env=env)
    assert res.returncode == 1, res.stderr
    assert "--iptables-min-sync-period must be a number of seconds" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_iptables_backend_from_the_environment_is_one_sentence(tmp_path: Path) -> None:
    env = {**os.environ, "SHIFTNET_PROXY_IPTABLES_BACKEND": "xtables"}
    res = shiftnet(tmp_path, "proxy", "--mode", "iptables", env=env)
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip() == (
        "error: iptables backend 'xtables' is not one of auto, nft, legacy"
    )
