"""``shiftnet apply`` of Routes with header actions, as a user runs it.

A bad action is one sentence naming the Route and the field, exit 1, and
nothing written; a good one is stored and read back as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from tests.support.cli import Shiftnet, one_error_line

pytestmark = pytest.mark.integration

ROUTE = """apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: web
  namespace: default
spec:
  host: web.example.com
  to:
    kind: Service
    name: web
{tls}  httpHeaders:
    actions:
      request:
        - name: {name}
          action:
            type: Set
            set:
              value: {value}
"""


@pytest.fixture
def sn(tmp_path: Path) -> Shiftnet:
    return Shiftnet(f"sqlite://{tmp_path}/state.db", tmp_path / "home")


def manifest(name: str = "X-A", value: str = "'%[req.hdr(Host),lower]'", tls: str = "") -> str:
    return ROUTE.format(name=name, value=value, tls=tls)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            manifest(value="'%[env(SECRET)]'"),
            'Route "web" is invalid: spec.httpHeaders.actions.request[0].action.set.value: '
            'Invalid value: "%[env(SECRET)]": ',
        ),
        (
            manifest(value='"a\\nX-Evil: 1"'),
            "spec.httpHeaders.actions.request[0].action.set.value: Invalid value: ",
        ),
        (
            manifest(name="Cookie"),
            "spec.httpHeaders.actions.request[0].name: Forbidden: ",
        ),
        (
            manifest(tls="  tls:\n    termination: passthrough\n"),
            'spec.tls.termination: Invalid value: "passthrough": only edge and re-encrypt',
        ),
    ],
)
def test_bad_header_actions_are_one_sentence_and_write_nothing(
    sn: Shiftnet, doc: str, expected: str
) -> None:
    before = sn.revision()
    res = sn.run("apply", "-f", "-", input=doc)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stdout == ""
    assert expected in one_error_line(res.stderr)
    assert "Traceback" not in res.stderr
    assert sn.revision() == before


def test_good_header_actions_are_stored_as_written(sn: Shiftnet) -> None:
    sn.ok("apply", "-f", "-", input=manifest(tls="  tls:\n    termination: edge\n"))
    stored = yaml.safe_load(sn.ok("get", "route", "web", "-n", "default", "-o", "yaml"))
    assert stored["spec"]["httpHeaders"] == {
        "actions": {
            "request": [
                {
                    "name": "X-A",
                    "action": {"type": "Set", "set": {"value": "%[req.hdr(Host),lower]"}},
                }
            ],
            "response": [],
        }
    }
