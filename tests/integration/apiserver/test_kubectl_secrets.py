"""kubectl against a running ``shiftnet apiserver``: Secrets as users see them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from tests.support.apiserver import APIServerProcess
from tests.support.tls import TestCA

pytestmark = pytest.mark.integration


def test_kubectl_creates_lists_and_describes_a_tls_secret(
    api: APIServerProcess, tmp_path: Path
) -> None:
    pair = TestCA().issue("web.example.com")
    cert, key = pair.write(tmp_path, "web")
    out = api.ok("create", "secret", "tls", "web-tls", f"--cert={cert}", f"--key={key}")
    assert out.strip() == "secret/web-tls created"
    table = api.ok("get", "secrets").splitlines()
    assert table[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert table[1].split()[:3] == ["web-tls", "kubernetes.io/tls", "2"]
    got = api.json("get", "secret", "web-tls")
    assert base64.b64decode(got["data"]["tls.crt"]) == cert.read_bytes()
    described = api.ok("describe", "secret", "web-tls")
    assert "kubernetes.io/tls" in described
    assert f"tls.crt:  {cert.stat().st_size} bytes" in described
    assert got["data"]["tls.key"] not in described and "PRIVATE KEY" not in described


def test_kubectl_apply_folds_string_data_and_is_refused_a_tls_secret_without_key(
    api: APIServerProcess, tmp_path: Path
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {token: s3cret}\n"
    )
    assert api.ok("apply", "-f", str(path)).strip() == "secret/token created"
    got = api.json("get", "secret", "token")
    assert got["type"] == "Opaque"
    assert base64.b64decode(got["data"]["token"]) == b"s3cret"
    assert "stringData" not in got
    path.write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: half}\ntype: kubernetes.io/tls\n"
        "stringData: {tls.crt: x}\n"
    )
    result = api.kubectl("apply", "-f", str(path))
    assert result.returncode != 0
    assert "data[tls.key]: Required value" in result.stderr
    assert api.kubectl("get", "secret", "half").returncode != 0
