"""The SQLite store's files are private: they hold every Route's TLS key."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from shiftnet.store import open_store

pytestmark = pytest.mark.integration


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def common_umask():
    """The umask most users have: without care SQLite would make 0644 files."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def secret(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Thing",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"key": "-----BEGIN PRIVATE KEY-----"},
    }


async def test_new_store_files_are_0600_in_a_0700_dir(tmp_path: Path, common_umask: None) -> None:
    db = tmp_path / "new" / "state.db"
    store = open_store(f"sqlite:///{db}")
    try:
        await store.create("things", secret("a"))
        files = {p.name: _mode(p) for p in db.parent.iterdir()}
    finally:
        await store.close()
    # The WAL and shared-memory files exist while the store is open.
    assert files == {"state.db": 0o600, "state.db-wal": 0o600, "state.db-shm": 0o600}
    assert _mode(db.parent) == 0o700


async def test_existing_parent_dir_keeps_its_mode(tmp_path: Path, common_umask: None) -> None:
    tmp_path.chmod(0o755)
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    try:
        await store.create("things", secret("a"))
    finally:
        await store.close()
    assert _mode(tmp_path) == 0o755
    assert _mode(tmp_path / "state.db") == 0o600


async def test_loose_store_of_an_older_version_is_tightened(
    tmp_path: Path, common_umask: None
) -> None:
    db = tmp_path / "state.db"
    # An older shiftnet left a 0644 database with its WAL files (a reader keeps them).
    old = sqlite3.connect(db)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE t (x)")
    old.execute("INSERT INTO t VALUES (1)")
    old.commit()
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (tmp_path / name).chmod(0o644)
    try:
        store = open_store(f"sqlite:///{db}")
        try:
            await store.create("things", secret("a"))
        finally:
            await store.close()
    finally:
        old.close()
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        path = tmp_path / name
        if path.exists():
            assert _mode(path) == 0o600, name
    assert _mode(db) == 0o600
