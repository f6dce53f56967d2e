"""write_file_set: atomic, change-only writes that remove stale files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shiftnet.errors import ConfigError
from shiftnet.router.haproxy.files import read_file_set, write_file_set


def test_writes_only_changed_and_removes_stale(tmp_path: Path) -> None:
    first = write_file_set(tmp_path, {"haproxy.cfg": b"a", "x.map": b"k v\n", "certs/a.pem": b"p"})
    assert first.written == ["certs/a.pem", "haproxy.cfg", "x.map"] and first.changed
    mtime = os.stat(tmp_path / "x.map").st_mtime_ns
    ino = os.stat(tmp_path / "x.map").st_ino
    second = write_file_set(tmp_path, {"haproxy.cfg": b"b", "x.map": b"k v\n"})
    assert second.written == ["haproxy.cfg"]
    assert second.removed == ["certs/a.pem"]
    assert not (tmp_path / "certs").exists()
    assert os.stat(tmp_path / "x.map").st_mtime_ns == mtime
    assert os.stat(tmp_path / "x.map").st_ino == ino
    assert read_file_set(tmp_path) == {"haproxy.cfg": b"b", "x.map": b"k v\n"}
    assert not write_file_set(tmp_path, {"haproxy.cfg": b"b", "x.map": b"k v\n"}).changed


def test_known_set_skips_reading_unchanged_files(tmp_path: Path) -> None:
    old = {"haproxy.cfg": b"a", "certs/a.pem": b"p", "certs/b.pem": b"q"}
    write_file_set(tmp_path, old)
    (tmp_path / "certs/b.pem").write_bytes(b"changed behind the driver's back")
    new = {"haproxy.cfg": b"b", "certs/b.pem": b"q"}
    result = write_file_set(tmp_path, new, known=old)
    # Only what differs from the known set is touched: the config and the removal.
    assert result.written == ["haproxy.cfg"] and result.removed == ["certs/a.pem"]
    assert (tmp_path / "certs/b.pem").read_bytes() == b"changed behind the driver's back"
    assert write_file_set(tmp_path, new).written == ["certs/b.pem"]  # no known set: compared


def test_replaces_by_rename_and_keys_are_private(tmp_path: Path) -> None:
    write_file_set(tmp_path, {"haproxy.cfg": b"old", "certs/r.pem": b"key"})
    ino = os.stat(tmp_path / "haproxy.cfg").st_ino
    write_file_set(tmp_path, {"haproxy.cfg": b"new", "certs/r.pem": b"key"})
    assert os.stat(tmp_path / "haproxy.cfg").st_ino != ino  # a new inode: renamed into place
    assert (os.stat(tmp_path / "certs/r.pem").st_mode & 0o777) == 0o600
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]


def test_leftover_temp_files_are_cleaned(tmp_path: Path) -> None:
    (tmp_path / ".tmp-haproxy.cfg.123").write_bytes(b"half")
    res = write_file_set(tmp_path, {"haproxy.cfg": b"x"})
    assert res.removed == [".tmp-haproxy.cfg.123"]


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../b", "", ".tmp-x", "a/./b"])
def test_refuses_names_that_escape(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError):
        write_file_set(tmp_path / "d", {bad: b"x"})
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())
