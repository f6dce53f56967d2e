"""Pure parts of the API server: URL parsing, field selectors, paging, output shape, Status."""

from __future__ import annotations

import pytest

from shiftnet.api.fielderrors import forbidden, invalid
from shiftnet.apiserver import status
from shiftnet.apiserver.config import APIServerConfig, parse_listen
from shiftnet.apiserver.fieldselectors import parse_field_selector
from shiftnet.apiserver.paging import decode_token, page
from shiftnet.apiserver.paths import parse_path
from shiftnet.apiserver.resources import find
from shiftnet.apiserver.status import StatusError
from shiftnet.apiserver.wire import out_object
from shiftnet.errors import ConfigError


def test_default_listen_is_loopback_only() -> None:
    cfg = APIServerConfig.build(__import__("pathlib").Path("/x"), env={})
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 6443)
    with pytest.raises(ConfigError, match="must look like ADDR:PORT"):
        parse_listen("6443")


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("/api/v1/pods", ("pods", None, None, None)),
        ("/api/v1/namespaces/web/pods/p1/log", ("pods", "web", "p1", "log")),
        ("/api/v1/namespaces/web", ("namespaces", None, "web", None)),
        ("/api/v1/namespaces/web/status", ("namespaces", None, "web", "status")),
        ("/api/v1/nodes/n1/status", ("nodes", None, "n1", "status")),
        ("/apis/route.openshift.io/v1/namespaces/a/routes/r", ("routes", "a", "r", None)),
    ],
)
def test_paths_name_resource_namespace_name_subresource(
    path: str, want: tuple[object, ...]
) -> None:
    t = parse_path(path)
    assert t is not None and t.resource is not None
    assert (t.resource.plural, t.namespace, t.name, t.subresource) == want


def test_unknown_resources_are_not_guessed() -> None:
    t = parse_path("/api/v1/namespaces/a/routes")  # routes live in route.openshift.io
    assert t is not None and t.unknown == "routes"
    assert parse_path("/metrics") is None


def test_field_selectors_match_and_refuse_unknown_fields() -> None:
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Failed", "pods")
    pod = {"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}, "metadata": {}}
    assert sel.matches(pod)
    assert not sel.matches({**pod, "status": {"phase": "Failed"}})
    with pytest.raises(StatusError) as err:
        parse_field_selector("spec.nodeName=n1", "services")
    assert err.value.code == 400 and "spec.nodeName" in err.value.message


def test_pages_continue_after_the_last_key() -> None:
    items = [{"metadata": {"namespace": "a", "name": n}} for n in "pqrst"]
    first, token, remaining = page(items, 7, 2, None)
    assert [o["metadata"]["name"] for o in first] == ["p", "q"] and remaining == 3
    pos = decode_token(token)
    assert pos.revision == 7
    second, token2, _ = page(items, 7, 2, pos)
    assert [o["metadata"]["name"] for o in second] == ["r", "s"]
    last, token3, _ = page(items, 7, 2, decode_token(token2))
    assert [o["metadata"]["name"] for o in last] == ["t"] and token3 == ""
    with pytest.raises(StatusError):
        decode_token("!!not-a-token")


def test_output_omits_empty_fields_and_keeps_empty_label_values() -> None:
    obj = {
        "metadata": {
            "name": "a",
            "labels": {"x": ""},
            "creationTimestamp": "2024-05-01T10:00:00.123456Z",
        },
        "spec": {"path": "", "alternateBackends": [], "to": {"name": "s"}},
        "status": {"ingress": []},
    }
    out = out_object(obj)
    assert out == {
        "metadata": {"name": "a", "labels": {"x": ""}, "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"to": {"name": "s"}},
    }


def test_invalid_status_names_every_field() -> None:
    info = find("route.openshift.io", "v1", "routes")
    assert info is not None
    err = status.invalid(
        info,
        "web",
        [
            forbidden("spec.path", "passthrough termination does not support paths"),
            invalid("spec.host", "A", "bad"),
        ],
    )
    body = err.body()
    assert body["code"] == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith(
        'Route.route.openshift.io "web" is invalid: [spec.path: Forbidden'
    )
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.path", "spec.host"]
    assert body["details"]["causes"][0]["reason"] == "FieldValueForbidden"
