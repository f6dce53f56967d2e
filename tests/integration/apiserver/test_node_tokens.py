"""Tokens of the token file next to the admin's: a real ``shiftnet apiserver`` accepts them."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.apiserver import SHIFTNET, APIServerProcess

from shiftnet.apiserver.tokens import NODES_GROUP, issue_token, node_user

pytestmark = pytest.mark.integration


@pytest.fixture
def issued(tmp_path: Path) -> Iterator[tuple[APIServerProcess, str]]:
    server = APIServerProcess(home=tmp_path / "home")
    token = issue_token(server.home / "apiserver", node_user("n1"), [NODES_GROUP])
    server.start()
    try:
        yield server, token
    finally:
        server.stop()


def test_a_node_token_is_accepted_and_an_unknown_one_is_not(
    issued: tuple[APIServerProcess, str],
) -> None:
    api, node_token = issued
    ctx = ssl.create_default_context(cafile=api.ca)
    with httpx.Client(verify=ctx, timeout=10) as http:

        def status(token: str) -> int:
            res = http.get(f"{api.url}/api/v1/nodes", headers={"Authorization": f"Bearer {token}"})
            return res.status_code

        assert status(node_token) == 200
        assert status(api.token) == 200
        assert status(node_token[:-1]) == 401
        assert status("not-a-token") == 401
    # kubectl with only the node's token
    res = api.kubectl("get", "nodes", "--token", node_token)
    assert res.returncode == 0, res.stderr


def test_a_malformed_token_file_stops_the_server_with_one_sentence(tmp_path: Path) -> None:
    api = APIServerProcess(home=tmp_path / "home")
    (api.home / "apiserver").mkdir(parents=True, mode=0o700)
    tokens = api.home / "apiserver" / "tokens.csv"
    tokens.write_text("abc123,alice\n")
    tokens.chmod(0o600)
    res = subprocess.run(
        [SHIFTNET, "--store", api.store, "apiserver", "--api-listen", f"127.0.0.1:{api.port}"],
        env=api.env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode != 0
    assert f"token file {tokens} line 1: expected token,user,uid[,groups]" in res.stderr
    assert "Traceback" not in res.stderr
    assert not api.kubeconfig.exists()
