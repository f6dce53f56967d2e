"""``shiftnet apply/get/describe`` of Secrets: data is printed only with ``-o yaml|json``."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from tests.support.cli import Shiftnet

pytestmark = pytest.mark.integration

VALUE = "s3cret-token-value"
SECRET = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: token, namespace: default}}
stringData: {{token: {VALUE}}}
"""


@pytest.fixture
def sn(tmp_path: Path) -> Shiftnet:
    return Shiftnet(f"sqlite:///{tmp_path}/state.db", tmp_path / "home")


def test_get_and_describe_never_print_the_data(sn: Shiftnet, tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(SECRET)
    assert sn.ok("apply", "-f", str(path)).strip() == "secret/token created"
    encoded = base64.b64encode(VALUE.encode()).decode()
    table = sn.ok("get", "secrets")
    assert table.splitlines()[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert table.splitlines()[1].split()[:3] == ["token", "Opaque", "1"]
    described = sn.ok("describe", "secret", "token")
    assert f"token:  {len(VALUE)} bytes" in described or f"token: {len(VALUE)} bytes" in described
    for text in (table, described, sn.ok("get", "secret", "token", "-o", "wide")):
        assert VALUE not in text and encoded not in text
    doc = yaml.safe_load(sn.ok("get", "secret", "token", "-o", "yaml"))
    assert doc["data"] == {"token": encoded} and "stringData" not in doc


def test_a_tls_secret_without_its_key_is_refused_naming_the_field(
    sn: Shiftnet, tmp_path: Path
) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: half}\n"
        "type: kubernetes.io/tls\nstringData: {tls.crt: x}\n"
    )
    result = sn.run("apply", "-f", str(path))
    assert result.returncode != 0
    assert 'Secret "half" is invalid: data[tls.key]: Required value' in result.stderr
    assert "Traceback" not in result.stderr
    assert sn.run("get", "secret", "half").returncode != 0
