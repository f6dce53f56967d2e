"""``spec.tls.externalCertificate``: OpenShift's API rules (not with certificate, not on
passthrough; an empty name is no reference)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from shiftnet.api import Route, parse_object
from shiftnet.api.validation import errors
from shiftnet.cli.describers import describe_route


def route(tls: dict[str, Any]) -> Route:
    obj = parse_object(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "web", "namespace": "demo"},
            "spec": {"host": "web.example.com", "to": {"name": "web"}, "tls": tls},
        }
    )
    assert isinstance(obj, Route)
    return obj


@pytest.mark.parametrize(
    ("tls", "expected"),
    [
        ({"termination": "edge", "externalCertificate": {"name": "web-tls"}}, []),
        ({"termination": "reencrypt", "externalCertificate": {"name": "web-tls"}}, []),
        ({"termination": "passthrough", "externalCertificate": {"name": ""}}, []),
        (
            {"termination": "passthrough", "externalCertificate": {"name": "web-tls"}},
            [
                'spec.tls.externalCertificate: Invalid value: "web-tls": '
                "passthrough termination does not support certificates"
            ],
        ),
        (
            {
                "termination": "edge",
                "certificate": "x",
                "externalCertificate": {"name": "web-tls"},
            },
            [
                'spec.tls.externalCertificate: Invalid value: "web-tls": '
                "cannot specify both tls.certificate and tls.externalCertificate"
            ],
        ),
    ],
)
def test_openshift_rules(tls: dict[str, Any], expected: list[str]) -> None:
    found = [str(e) for e in errors(route(tls)) if e.field == "spec.tls.externalCertificate"]
    assert found == expected


def test_the_reference_round_trips_in_openshift_shape() -> None:
    tls = {"termination": "edge", "externalCertificate": {"name": "web-tls"}}
    assert route(tls).to_dict()["spec"]["tls"] == tls


def test_describe_names_the_secret_never_its_content() -> None:
    tls = {"termination": "edge", "externalCertificate": {"name": "web-tls"}}
    lines = describe_route(route(tls), {}, dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert any(line.split() == ["External", "Certificate:", "secret/web-tls"] for line in lines)
