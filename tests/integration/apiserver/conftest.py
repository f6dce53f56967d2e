"""A running ``shiftnet apiserver`` per test, over its own SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess


@pytest.fixture
def api(tmp_path: Path) -> Iterator[APIServerProcess]:
    server = APIServerProcess(home=tmp_path / "home")
    server.start()
    try:
        yield server
    finally:
        server.stop()
