"""The CLI's registry and settings: quick start-up, flag/env precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

import shiftnet.cli.main as cli_main
from shiftnet.cli.main import SUBCOMMANDS, command_word, modules_for
from shiftnet.cli.settings import resolve_settings


def test_command_word_skips_global_options() -> None:
    assert command_word(["--store", "etcd://x:1", "--debug", "get", "pods"]) == "get"
    assert command_word(["--state-dir", "/tmp/x", "-v", "apply", "-f", "a"]) == "apply"
    assert command_word(["--store=etcd://x:1", "describe"]) == "describe"
    assert command_word(["--help"]) is None


def test_only_the_named_module_is_loaded() -> None:
    assert modules_for(["get", "pods"]) == ("shiftnet.cli.get",)
    assert modules_for(["--help"]) == SUBCOMMANDS
    assert modules_for(["no-such-command"]) == SUBCOMMANDS


def test_settings_precedence() -> None:
    s = resolve_settings(None, None, {"HOME": "/h"})
    assert s.state_dir == Path("~/.shiftnet").expanduser().absolute()
    assert s.store_url == f"sqlite://{s.state_dir}/state.db"
    s = resolve_settings(None, None, {"SHIFTNET_HOME": "/srv/sn"})
    assert s.store_url == "sqlite:///srv/sn/state.db"
    s = resolve_settings(
        None, "/a", {"SHIFTNET_HOME": "/srv/sn", "SHIFTNET_STORE": "etcd://e:2379"}
    )
    assert (s.state_dir, s.store_url) == (Path("/a"), "etcd://e:2379")
    s = resolve_settings("sqlite:///x.db", "/a", {"SHIFTNET_STORE": "etcd://e:2379"})
    assert s.store_url == "sqlite:///x.db"


def _failing_settings(*_args: object) -> object:
    raise RuntimeError("boom\nsecond line")


def test_a_defect_prints_one_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The last boundary: an exception that is not a ShiftnetError is a defect;
    # the user sees one line naming it and how to see more.
    monkeypatch.setattr(cli_main, "resolve_settings", _failing_settings)
    code = cli_main.main(["--state-dir", str(tmp_path), "get", "pods"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert err.startswith("error: internal error (RuntimeError: boom\\nsecond line)")
    assert "--debug" in err


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli_main, "resolve_settings", _failing_settings)
    with pytest.raises(RuntimeError):
        cli_main.main(["--debug", "--state-dir", str(tmp_path), "get", "pods"])
