"""``shiftnet logs router``: which argument names a router, and --tail across a rotation."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from shiftnet.cli.router_logs import print_router_log, router_name
from shiftnet.errors import InvalidInput


def test_router_words() -> None:
    assert router_name("router", None) == "router"
    assert router_name("router/edge", None) == "edge"
    assert router_name("router", "default") is None  # with -n: a pod named router
    assert router_name("web-1", None) is None
    with pytest.raises(InvalidInput, match="not a lowercase DNS label"):
        router_name("router/../../etc", None)


def test_tail_counts_across_the_rotated_file(tmp_path: Path) -> None:
    logs = tmp_path / "router-router" / "logs"
    logs.mkdir(parents=True)
    (logs / "access.log.1").write_bytes(b"old-1\nold-2\n")
    (logs / "access.log").write_bytes(b"new-1\n")
    out = io.BytesIO()
    asyncio.run(print_router_log(tmp_path, "router", 2, False, out))
    assert out.getvalue() == b"old-2\nnew-1\n"
    out = io.BytesIO()
    asyncio.run(print_router_log(tmp_path, "router", -1, False, out))
    assert out.getvalue() == b"old-1\nold-2\nnew-1\n"


def test_no_log_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match='router "edge" has no access log in'):
        asyncio.run(print_router_log(tmp_path, "edge", -1, False, io.BytesIO()))
