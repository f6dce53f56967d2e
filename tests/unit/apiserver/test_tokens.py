"""The API server's token file: issued once per user, private, read back, refused when malformed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from shiftnet.apiserver.tokens import (
    NODES_GROUP,
    TokenTable,
    TokenUser,
    issue_token,
    node_user,
    read_tokens,
    token_file,
)
from shiftnet.errors import ConfigError


def test_a_token_per_user_issued_once_into_a_private_file(tmp_path: Path) -> None:
    pki = tmp_path / "apiserver"
    one = issue_token(pki, node_user("n1"), [NODES_GROUP])
    two = issue_token(pki, node_user("n2"), [NODES_GROUP])
    assert one != two and len(one) >= 40
    assert issue_token(pki, node_user("n1"), [NODES_GROUP]) == one  # kept, not replaced
    assert stat.S_IMODE(pki.stat().st_mode) == 0o700
    assert stat.S_IMODE(token_file(pki).stat().st_mode) == 0o600
    assert read_tokens(token_file(pki)) == {
        one: TokenUser("system:node:n1", "system:node:n1", ("system:nodes",)),
        two: TokenUser("system:node:n2", "system:node:n2", ("system:nodes",)),
    }


def test_the_static_token_file_shape_is_read(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text('# comment\n\nabc123,alice,1001,"dev,ops"\nxyz789,bob,1002\n')
    assert read_tokens(path) == {
        "abc123": TokenUser("alice", "1001", ("dev", "ops")),
        "xyz789": TokenUser("bob", "1002", ()),
    }
    assert read_tokens(tmp_path / "missing.csv") == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("abc123,alice\n", "line 1: expected token,user,uid[,groups], found 2 fields"),
        ("ok1,a,1\n,bob,2\n", "line 2: the token is empty"),
        ("abc 123,alice,1\n", "line 1: the token is empty or holds characters"),
        ('abc,al"ice,1\n', "line 1: the user is empty or holds characters"),
        ("abc,alice,1\nabc,bob,2\n", "line 2: the token is listed twice"),
    ],
)
def test_a_malformed_line_is_named(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_tokens(path)
    assert str(err.value).startswith(f"token file {path} ")
    assert says in str(err.value)


def test_a_user_name_the_file_cannot_hold_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='token user "a,b" is empty or holds characters'):
        issue_token(tmp_path / "apiserver", "a,b")
    assert not (tmp_path / "apiserver" / "tokens.csv").exists()


def test_the_table_knows_listed_tokens_only() -> None:
    table = TokenTable({"abc123": TokenUser("alice", "1")})
    assert len(table) == 1
    assert table.user("abc123") == TokenUser("alice", "1")
    assert table.user("abc12") is None and table.user("") is None
