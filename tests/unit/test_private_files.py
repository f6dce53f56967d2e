"""Private state files: 0700 directories and 0600 files from creation, loose ones tightened."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from shiftnet.errors import ConfigError
from shiftnet.private_files import (
    ensure_private_dir,
    ensure_private_tree,
    tighten_private_file,
    tighten_private_tree,
    write_private_file,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    """A umask that takes nothing away: modes must come from the code, not the umask."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_new_dir_and_its_new_parents_are_0700(tmp_path: Path, open_umask: None) -> None:
    target = tmp_path / "a" / "b" / "state"
    assert ensure_private_dir(target) == target
    assert _mode(target) == 0o700
    assert _mode(tmp_path / "a") == 0o700
    assert _mode(tmp_path / "a" / "b") == 0o700


def test_existing_parent_keeps_its_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    ensure_private_dir(tmp_path / "state")
    assert _mode(tmp_path) == 0o755


def test_loose_dir_is_tightened_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loose = tmp_path / "state"
    loose.mkdir()
    loose.chmod(0o755)
    with caplog.at_level(logging.WARNING, logger="shiftnet.private_files"):
        ensure_private_dir(loose)
    assert _mode(loose) == 0o700
    assert "tightened" in caplog.text and str(loose) in caplog.text


def test_a_file_in_the_way_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        ensure_private_dir(tmp_path / "state")


def test_written_file_is_0600_even_with_open_umask(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "secret"
    write_private_file(path, "token\n")
    assert path.read_text() == "token\n"
    assert _mode(path) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]


def test_rewrite_replaces_a_loose_file_with_a_private_one(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"old")
    path.chmod(0o644)
    write_private_file(path, b"new")
    assert path.read_bytes() == b"new"
    assert _mode(path) == 0o600


def test_tighten_file_and_tree(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub").chmod(0o755)
    db = tmp_path / "state.db"
    db.write_bytes(b"x")
    db.chmod(0o644)
    tool = tmp_path / "sub" / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    tool.chmod(0o755)
    assert tighten_private_file(db) is True
    assert tighten_private_file(db) is False
    assert _mode(db) == 0o600
    assert tighten_private_tree(tmp_path) == 2
    assert _mode(tmp_path / "sub") == 0o700
    assert _mode(tool) == 0o700
    assert tighten_private_tree(tmp_path) == 0


def test_private_tree_tightens_everything_once_loose(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "router-router" / "conf").mkdir(parents=True)
    for d in (state, state / "router-router", state / "router-router" / "conf"):
        d.chmod(0o755)
    cfg = state / "router-router" / "conf" / "haproxy.cfg"
    cfg.write_text("global\n")
    cfg.chmod(0o644)
    ensure_private_tree(state)
    assert _mode(state) == _mode(state / "router-router") == 0o700
    assert _mode(state / "router-router" / "conf") == 0o700
    assert _mode(cfg) == 0o600


def test_private_tree_of_a_private_dir_walks_nothing(tmp_path: Path) -> None:
    state = ensure_private_tree(tmp_path / "state")
    inner = state / "pod.log"
    inner.write_text("x")
    inner.chmod(0o644)  # a private parent already hides it; no walk on every start
    ensure_private_tree(state)
    assert _mode(state) == 0o700 and _mode(inner) == 0o644


def test_shared_dirs_are_never_taken_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sticky = tmp_path / "shared"
    sticky.mkdir()
    sticky.chmod(0o1777)
    with pytest.raises(ConfigError, match="give shiftnet a directory of its own"):
        ensure_private_tree(sticky)
    assert _mode(sticky) == 0o1777
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(ConfigError, match="cannot be made private"):
        ensure_private_dir(home)
    assert _mode(home) == 0o755
