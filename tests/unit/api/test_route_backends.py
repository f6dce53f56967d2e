"""Backend names as OpenShift's ``ValidateRoute`` has them: non-empty, nothing more.

A Service that does not exist, or whose name could never be a Service's,
simply has no endpoints; the Route is accepted.
"""

from __future__ import annotations

from typing import Any

import pytest

from shiftnet.api import parse_object
from shiftnet.api.route import Route
from shiftnet.api.validation import errors


def route(spec: dict[str, Any]) -> Route:
    raw = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": spec,
    }
    obj = parse_object(raw)
    assert isinstance(obj, Route)
    return obj


# (spec.to.name, alternateBackends names, the first error or None), from ValidateRoute
CASES = [
    ("web", [], None),
    ("My_Service", [], None),
    ("UPPER", [], None),
    ("dots.in.name", [], None),
    ("-leading-hyphen", [], None),
    ("a" * 300, [], None),
    ("svc with space", [], None),
    ("web", ["Other_Svc", "x.y", "Z"], None),
    ("", [], "spec.to.name: Required value"),
    ("web", ["ok", ""], "spec.alternateBackends[1].name: Required value"),
]


@pytest.mark.parametrize(("to", "alternates", "want"), CASES)
def test_backend_names(to: str, alternates: list[str], want: str | None) -> None:
    spec: dict[str, Any] = {"to": {"kind": "Service", "name": to}}
    if alternates:
        spec["alternateBackends"] = [{"kind": "Service", "name": n} for n in alternates]
    found = errors(route(spec))
    assert (str(found[0]) if found else None) == want
