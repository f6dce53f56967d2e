# ruff: noqa: E501  (expected messages are long literal sentences)
"""API validation as table tests: each case names the field path and the exact message.

Route cases follow OpenShift's documented behaviour (the route API's own
validation, its CRD test script and the router's documentation); where
shiftnet is stricter the case says so and docs/api.md lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.support.pem import issue, key_pem

from shiftnet.api import parse_object
from shiftnet.api.base import Resource
from shiftnet.api.validation import errors, validate
from shiftnet.errors import InvalidObject

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must be made of lowercase letters, digits, '-' or '.', "
    "and must start and end with a letter or digit (e.g. 'www.example.com')"
)
LABEL = (
    "a lowercase RFC 1123 label must be made of lowercase letters, digits or '-', "
    "and must start and end with a letter or digit (e.g. 'web', or '1-abc')"
)
LONG_LABEL = "each part between dots must be no more than 63 characters"
PORT_RANGE = "must be between 1 and 65535, inclusive"
WEIGHT = "weight must be an integer between 0 and 256"
NO_CERTS = "passthrough termination does not support certificates"
EDGE_POLICY = (
    "invalid value for InsecureEdgeTerminationPolicy option, "
    "acceptable values are None, Allow, Redirect, or empty"
)
PASSTHROUGH_POLICY = (
    "invalid value for InsecureEdgeTerminationPolicy option, "
    "acceptable values are None, Redirect, or empty"
)
TERMINATIONS = 'supported values: "edge", "passthrough", "reencrypt"'

_CA = issue("validation test CA", ca=True)
_LEAF = issue("www.example.com", issuer=_CA)
CERT, KEY, CA = _LEAF.cert_pem, _LEAF.key_pem, _CA.cert_pem

LABEL63 = "a" * 63
HOST253 = ".".join([LABEL63, LABEL63, LABEL63, "b" * 61])  # 63*3 + 61 + 3 dots = 253


@dataclass(frozen=True)
class Case:
    id: str
    spec: dict[str, Any]
    want: str | None  # the first error, "field: message"; None when valid
    annotations: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def route(case: Case) -> Resource:
    spec = {"to": {"kind": "Service", "name": "web"}, **case.spec}
    meta = {"name": "web", "namespace": "demo", "annotations": case.annotations, **case.meta}
    raw = {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": meta, "spec": spec}
    return parse_object(raw)


def tls(termination: str, **fields: str) -> dict[str, Any]:
    return {"tls": {"termination": termination, **fields}}


ROUTE_CASES = [
    # --- valid routes
    Case("minimal", {}, None),
    Case("host", {"host": "www.example.com"}, None),
    Case("host single label", {"host": "localhost"}, None),
    Case("host starts with digit", {"host": "1.example.com"}, None),
    Case("host with hyphens", {"host": "a-b.example-c.com"}, None),
    Case("host label of 63", {"host": f"{LABEL63}.example.com"}, None),
    Case("host of 253", {"host": HOST253}, None),
    Case("path root", {"path": "/"}, None),
    Case("path nested", {"path": "/api/v1/"}, None),
    Case("path with query sign", {"path": "/search?q"}, None),
    Case("edge without certificates", tls("edge"), None),
    Case("edge with path", {"path": "/", **tls("edge")}, None),
    Case("edge Redirect", tls("edge", insecureEdgeTerminationPolicy="Redirect"), None),
    Case("edge Allow", tls("edge", insecureEdgeTerminationPolicy="Allow"), None),
    Case("edge None", tls("edge", insecureEdgeTerminationPolicy="None"), None),
    Case("edge empty policy", tls("edge", insecureEdgeTerminationPolicy=""), None),
    Case("edge with certificates", tls("edge", certificate=CERT, key=KEY, caCertificate=CA), None),
    Case("reencrypt destination CA", tls("reencrypt", destinationCACertificate=CA), None),
    Case("reencrypt Allow", tls("reencrypt", insecureEdgeTerminationPolicy="Allow"), None),
    Case("passthrough", tls("passthrough"), None),
    Case(
        "passthrough Redirect", tls("passthrough", insecureEdgeTerminationPolicy="Redirect"), None
    ),
    Case("passthrough None", tls("passthrough", insecureEdgeTerminationPolicy="None"), None),
    Case(
        "wildcard Subdomain with host",
        {"host": "www.example.com", "wildcardPolicy": "Subdomain"},
        None,
    ),
    Case("wildcard None", {"wildcardPolicy": "None"}, None),
    Case("wildcard empty", {"wildcardPolicy": ""}, None),
    Case("to.kind empty defaults to Service", {"to": {"kind": "", "name": "web"}}, None),
    Case("to.kind omitted", {"to": {"name": "web"}}, None),
    Case("weight 0", {"to": {"name": "web", "weight": 0}}, None),
    Case("weight 256", {"to": {"name": "web", "weight": 256}}, None),
    Case(
        "three alternate backends",
        {"alternateBackends": [{"name": "a"}, {"name": "b", "weight": 0}, {"name": "c"}]},
        None,
    ),
    Case("repeated alternate backends", {"alternateBackends": [{"name": "a"}] * 3}, None),
    Case("targetPort number", {"port": {"targetPort": 8080}}, None),
    Case("targetPort 1", {"port": {"targetPort": 1}}, None),
    Case("targetPort name", {"port": {"targetPort": "http"}}, None),
    Case("targetPort string 0", {"port": {"targetPort": "0"}}, None),
    Case("targetPort string digits", {"port": {"targetPort": "8443"}}, None),
    Case("subdomain", {"subdomain": "frontend"}, None),
    Case(
        "non-DNS host allowed by annotation",
        {"host": f"{'a' * 64}.example.com"},
        None,
        annotations={"route.openshift.io/allow-non-dns-compliant-host": "true"},
    ),
    # --- host
    Case(
        "host uppercase", {"host": "Foo.com"}, f'spec.host: Invalid value: "Foo.com": {SUBDOMAIN}'
    ),
    Case(
        "host underscore",
        {"host": "foo_bar.com"},
        f'spec.host: Invalid value: "foo_bar.com": {SUBDOMAIN}',
    ),
    Case(
        "host leading hyphen",
        {"host": "-foo.com"},
        f'spec.host: Invalid value: "-foo.com": {SUBDOMAIN}',
    ),
    Case(
        "host label ends in hyphen",
        {"host": "foo-.com"},
        f'spec.host: Invalid value: "foo-.com": {SUBDOMAIN}',
    ),
    Case(
        "host empty label",
        {"host": "foo..com"},
        f'spec.host: Invalid value: "foo..com": {SUBDOMAIN}',
    ),
    Case(
        "host leading dot",
        {"host": ".foo.com"},
        f'spec.host: Invalid value: ".foo.com": {SUBDOMAIN}',
    ),
    Case(
        "host trailing dot",
        {"host": "foo.com."},
        f'spec.host: Invalid value: "foo.com.": {SUBDOMAIN}',
    ),
    Case(
        "host wildcard star",
        {"host": "*.example.com"},
        f'spec.host: Invalid value: "*.example.com": {SUBDOMAIN}',
    ),
    Case(
        "host with space",
        {"host": "ex ample.com"},
        f'spec.host: Invalid value: "ex ample.com": {SUBDOMAIN}',
    ),
    Case(
        "host with port",
        {"host": "example.com:80"},
        f'spec.host: Invalid value: "example.com:80": {SUBDOMAIN}',
    ),
    Case(
        "host over 253",
        {"host": HOST253 + "b"},
        f'spec.host: Invalid value: "{HOST253}b": must be no more than 253 characters',
    ),
    Case(
        "host label of 64",
        {"host": f"{'a' * 64}.example.com"},
        f'spec.host: Invalid value: "{"a" * 64}.example.com": {LONG_LABEL}',
    ),
    Case(
        "non-DNS annotation still needs a subdomain",
        {"host": "Foo.com"},
        f'spec.host: Invalid value: "Foo.com": {SUBDOMAIN}',
        annotations={"route.openshift.io/allow-non-dns-compliant-host": "true"},
    ),
    Case(
        "subdomain invalid",
        {"subdomain": "Front_end"},
        f'spec.subdomain: Invalid value: "Front_end": {LABEL}',
    ),
    # --- path
    Case(
        "path without slash", {"path": "x"}, 'spec.path: Invalid value: "x": path must begin with /'
    ),
    Case(
        "path with hash",
        {"path": "/a#b"},
        'spec.path: Invalid value: "/a#b": cannot contain # or spaces',
    ),
    Case(
        "path with space",
        {"path": "/a b"},
        'spec.path: Invalid value: "/a b": cannot contain # or spaces',
    ),
    Case(
        "path with tab",
        {"path": "/a\tb"},
        'spec.path: Invalid value: "/a\\tb": cannot contain # or spaces',
    ),
    Case(
        "path with control character",
        {"path": "/a\x00b"},
        'spec.path: Invalid value: "/a\\u0000b": path must not contain control characters',
    ),
    Case(
        "passthrough with path",
        {"path": "/", **tls("passthrough")},
        'spec.path: Invalid value: "/": passthrough termination does not support paths',
    ),
    # --- termination combinations
    Case(
        "passthrough with certificate",
        tls("passthrough", certificate="x"),
        f'spec.tls.certificate: Invalid value: "redacted certificate data": {NO_CERTS}',
    ),
    Case(
        "passthrough with key",
        tls("passthrough", key="x"),
        f'spec.tls.key: Invalid value: "redacted key data": {NO_CERTS}',
    ),
    Case(
        "passthrough with caCertificate",
        tls("passthrough", caCertificate="x"),
        f'spec.tls.caCertificate: Invalid value: "redacted ca certificate data": {NO_CERTS}',
    ),
    Case(
        "passthrough with destinationCACertificate",
        tls("passthrough", destinationCACertificate="x"),
        "spec.tls.destinationCACertificate: Invalid value: "
        f'"redacted destination ca certificate data": {NO_CERTS}',
    ),
    Case(
        "edge with destinationCACertificate",
        tls("edge", destinationCACertificate=CA),
        "spec.tls.destinationCACertificate: Invalid value: "
        '"redacted destination ca certificate data": '
        "edge termination does not support destination certificates",
    ),
    Case(
        "unknown termination",
        tls("bogus"),
        f'spec.tls.termination: Unsupported value: "bogus": {TERMINATIONS}',
    ),
    Case(
        "termination is case sensitive",
        tls("Edge"),
        f'spec.tls.termination: Unsupported value: "Edge": {TERMINATIONS}',
    ),
    Case(
        "termination empty",
        tls(""),
        f'spec.tls.termination: Unsupported value: "": {TERMINATIONS}',
    ),
    Case(
        "termination missing",
        {"tls": {"insecureEdgeTerminationPolicy": "Redirect"}},
        "spec.tls.termination: Required value",
    ),
    # --- insecureEdgeTerminationPolicy
    Case(
        "edge nonsense policy",
        tls("edge", insecureEdgeTerminationPolicy="nonsense"),
        f'spec.tls.insecureEdgeTerminationPolicy: Invalid value: "nonsense": {EDGE_POLICY}',
    ),
    Case(
        "edge policy is case sensitive",
        tls("edge", insecureEdgeTerminationPolicy="redirect"),
        f'spec.tls.insecureEdgeTerminationPolicy: Invalid value: "redirect": {EDGE_POLICY}',
    ),
    Case(
        "reencrypt bad policy",
        tls("reencrypt", insecureEdgeTerminationPolicy="Disable"),
        f'spec.tls.insecureEdgeTerminationPolicy: Invalid value: "Disable": {EDGE_POLICY}',
    ),
    Case(
        "passthrough Allow",
        tls("passthrough", insecureEdgeTerminationPolicy="Allow"),
        f'spec.tls.insecureEdgeTerminationPolicy: Invalid value: "Allow": {PASSTHROUGH_POLICY}',
    ),
    Case(
        "passthrough nonsense policy",
        tls("passthrough", insecureEdgeTerminationPolicy="nonsense"),
        f'spec.tls.insecureEdgeTerminationPolicy: Invalid value: "nonsense": {PASSTHROUGH_POLICY}',
    ),
    # --- PEM syntax: not read by the API, as OpenShift's (the router checks it:
    # tests/unit/api/test_route_tls_split.py)
    Case("edge certificate not PEM", tls("edge", certificate="x", key=KEY), None),
    Case("edge key not PEM", tls("edge", certificate=CERT, key="not a key"), None),
    Case("edge key given as a certificate", tls("edge", certificate=CERT, key=CA), None),
    Case("edge caCertificate holds only a key", tls("edge", caCertificate=key_pem(_CA.key)), None),
    Case(
        "reencrypt destination CA not PEM",
        tls("reencrypt", destinationCACertificate="garbage"),
        None,
    ),
    # --- wildcardPolicy
    Case(
        "wildcard unknown",
        {"host": "www.example.com", "wildcardPolicy": "Domain"},
        'spec.wildcardPolicy: Unsupported value: "Domain": supported values: "None", "Subdomain"',
    ),
    Case(
        "wildcard Subdomain without host",
        {"wildcardPolicy": "Subdomain"},
        'spec.wildcardPolicy: Invalid value: "Subdomain": host name not specified for wildcard policy',
    ),
    # --- backends
    Case(
        "to.kind Nonsense",
        {"to": {"kind": "Nonsense", "name": "web"}},
        'spec.to.kind: Invalid value: "Nonsense": must reference a Service',
    ),
    Case(
        "to.kind Pod",
        {"to": {"kind": "Pod", "name": "web"}},
        'spec.to.kind: Invalid value: "Pod": must reference a Service',
    ),
    Case(
        "to.kind lowercase",
        {"to": {"kind": "service", "name": "web"}},
        'spec.to.kind: Invalid value: "service": must reference a Service',
    ),
    Case("to.name empty", {"to": {"kind": "Service", "name": ""}}, "spec.to.name: Required value"),
    Case("to.name missing", {"to": {"kind": "Service"}}, "spec.to.name: Required value"),
    Case(
        "to is null",
        {"to": None},
        "spec.to: Invalid value: null: must be an object",
    ),
    Case(
        "weight is not a number",
        {"to": {"name": "web", "weight": "heavy"}},
        'spec.to.weight: Invalid value: "heavy": must be an integer',
    ),
    Case(
        "targetPort is a float",
        {"port": {"targetPort": 80.5}},
        "spec.port.targetPort: Invalid value: 80.5: must be an integer",
    ),
    Case("to.name need not be a label", {"to": {"name": "My_Service"}}, None),
    Case(
        "to.weight negative",
        {"to": {"name": "web", "weight": -1}},
        f"spec.to.weight: Invalid value: -1: {WEIGHT}",
    ),
    Case(
        "to.weight 257",
        {"to": {"name": "web", "weight": 257}},
        f"spec.to.weight: Invalid value: 257: {WEIGHT}",
    ),
    Case(
        "to.weight 300",
        {"to": {"name": "web", "weight": 300}},
        f"spec.to.weight: Invalid value: 300: {WEIGHT}",
    ),
    Case(
        "four alternate backends",
        {"alternateBackends": [{"name": n} for n in "abcd"]},
        "spec.alternateBackends: Too many: 4: must have at most 3 items",
    ),
    Case(
        "alternate backend without name",
        {"alternateBackends": [{"name": "a"}, {"name": ""}, {"name": "c"}]},
        "spec.alternateBackends[1].name: Required value",
    ),
    Case(
        "alternate backend kind",
        {"alternateBackends": [{"kind": "Endpoints", "name": "a"}]},
        'spec.alternateBackends[0].kind: Invalid value: "Endpoints": must reference a Service',
    ),
    Case(
        "alternate backend weight",
        {"alternateBackends": [{"name": "a"}, {"name": "b"}, {"name": "c", "weight": 1000}]},
        f"spec.alternateBackends[2].weight: Invalid value: 1000: {WEIGHT}",
    ),
    # --- port
    Case("targetPort 0", {"port": {"targetPort": 0}}, "spec.port.targetPort: Required value"),
    Case("targetPort empty", {"port": {"targetPort": ""}}, "spec.port.targetPort: Required value"),
    # as upstream: any other number or name; it simply matches no port
    Case("targetPort too big", {"port": {"targetPort": 70000}}, None),
    Case("targetPort negative", {"port": {"targetPort": -8}}, None),
    Case("targetPort with a space", {"port": {"targetPort": "my port"}}, None),
    Case(
        "targetPort beyond 32 bits",
        {"port": {"targetPort": 2**31}},
        "spec.port.targetPort: Invalid value: 2147483648: must be a 32-bit integer",
    ),
    # --- unknown fields and metadata
    Case("unknown spec field", {"hots": "www.example.com"}, "spec.hots: unknown field"),
    Case("unknown tls field", tls("edge", cert="x"), "spec.tls.cert: unknown field"),
    Case(
        "route name uppercase",
        {},
        f'metadata.name: Invalid value: "Web": {SUBDOMAIN}',
        meta={"name": "Web"},
    ),
    Case(
        "route name may be a subdomain",
        {},
        None,
        meta={"name": "sitjenkins.com.cn"},
    ),
    Case(
        "errors come in field order: host before path",
        {"host": "Bad", "path": "x"},
        f'spec.host: Invalid value: "Bad": {SUBDOMAIN}',
    ),
]


def first_error(case: Case) -> str | None:
    try:
        obj = route(case)
    except InvalidObject as exc:  # shape errors (unknown field, wrong type) from parse_object
        return f"{exc.field}: {exc.message}"
    found = errors(obj)
    return str(found[0]) if found else None


def test_there_are_at_least_60_route_cases() -> None:
    assert len(ROUTE_CASES) >= 60
    assert len({c.id for c in ROUTE_CASES}) == len(ROUTE_CASES)


@pytest.mark.parametrize("case", ROUTE_CASES, ids=[c.id for c in ROUTE_CASES])
def test_route(case: Case) -> None:
    assert first_error(case) == case.want


def test_every_route_error_is_listed() -> None:
    obj = route(Case("many", {"host": "Bad", "path": "x", "to": {"name": "", "weight": 999}}, None))
    assert [e.field for e in errors(obj)] == [
        "spec.host",
        "spec.path",
        "spec.to.name",
        "spec.to.weight",
    ]


def test_passthrough_reports_every_certificate_field() -> None:
    spec = tls(
        "passthrough", certificate="a", key="b", caCertificate="c", destinationCACertificate="d"
    )
    fields = [e.field for e in errors(route(Case("all", spec, None)))]
    assert fields == [
        "spec.tls.certificate",
        "spec.tls.key",
        "spec.tls.caCertificate",
        "spec.tls.destinationCACertificate",
    ]


def test_validate_raises_the_first_error_as_invalid_object() -> None:
    obj = route(Case("bad host", {"host": "Foo.com"}, None))
    with pytest.raises(InvalidObject) as exc:
        validate(obj)
    err = exc.value
    assert (err.kind, err.name, err.field) == ("Route", "web", "spec.host")
    assert err.message == f'Invalid value: "Foo.com": {SUBDOMAIN}'
    assert str(err) == f'Route "web" is invalid: spec.host: Invalid value: "Foo.com": {SUBDOMAIN}'


def test_validate_returns_none_for_a_valid_object() -> None:
    assert validate(route(Case("ok", {"host": "www.example.com"}, None))) is None


def test_error_messages_never_echo_key_material() -> None:
    secret = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n"
    for spec in (tls("passthrough", key=secret), tls("edge", certificate=CERT, key=secret)):
        for e in errors(route(Case("k", spec, None))):
            assert "c2VjcmV0" not in str(e)


# ---------------------------------------------------------------- other kinds


def obj(
    kind: str, body: dict[str, Any], *, name: str = "x", namespace: str | None = "demo"
) -> Resource:
    api = {"ClusterNetwork": "network.openshift.io/v1", "HostSubnet": "network.openshift.io/v1"}
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return parse_object({"apiVersion": api.get(kind, "v1"), "kind": kind, "metadata": meta, **body})


def service(spec: dict[str, Any], name: str = "web") -> Resource:
    return obj("Service", {"spec": spec}, name=name)


def pod(spec: dict[str, Any]) -> Resource:
    return obj("Pod", {"spec": spec})


def container(**kw: Any) -> dict[str, Any]:
    return {"name": "app", "command": ["sleep", "1"], **kw}


PORT80 = {"port": 80}

OTHER_CASES: list[tuple[str, Resource, str | None]] = [
    # --- metadata (every kind)
    (
        "namespace name is a label",
        obj("Namespace", {}, name="my.ns", namespace=None),
        f'metadata.name: Invalid value: "my.ns": {LABEL}',
    ),
    ("namespace valid", obj("Namespace", {}, name="team-a", namespace=None), None),
    (
        "name required",
        obj("Namespace", {}, name="", namespace=None),
        "metadata.name: Required value: name or generateName is required",
    ),
    (
        "cluster-scoped kind refuses a namespace",
        obj("Namespace", {}, name="a", namespace="b"),
        "metadata.namespace: Forbidden: not allowed on this type",
    ),
    (
        "namespaced kind needs a namespace",
        obj("Pod", {"spec": {"containers": [container()]}}, namespace=None),
        "metadata.namespace: Required value",
    ),
    (
        "namespace must be a label",
        obj("Pod", {"spec": {"containers": [container()]}}, namespace="Demo"),
        f'metadata.namespace: Invalid value: "Demo": {LABEL}',
    ),
    (
        "pod name may be a subdomain",
        obj("Pod", {"spec": {"containers": [container()]}}, name="web.1"),
        None,
    ),
    (
        "kept pod fields as Kubernetes writes them",
        pod(
            {
                "containers": [
                    container(
                        imagePullPolicy="IfNotPresent",
                        resources={
                            "limits": {"memory": "128Mi", "cpu": 2},
                            "requests": {"cpu": "100m"},
                        },
                        terminationMessagePolicy="FallbackToLogsOnError",
                    )
                ],
                "tolerations": [
                    {
                        "key": "dedicated",
                        "operator": "Equal",
                        "value": "web",
                        "effect": "NoSchedule",
                    },
                    {"operator": "Exists"},
                    {"key": "gone", "effect": "NoExecute", "tolerationSeconds": 30},
                ],
                "imagePullSecrets": [{"name": "registry"}],
            }
        ),
        None,
    ),
    (
        "image pull policy",
        pod({"containers": [container(imagePullPolicy="Sometimes")]}),
        'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values:'
        ' "Always", "IfNotPresent", "Never"',
    ),
    (
        "a quantity",
        pod({"containers": [container(resources={"requests": {"memory": "64 MB"}})]}),
        'spec.containers[0].resources.requests.memory: Invalid value: "64 MB": must match the'
        " regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (
        "toleration effect",
        pod({"containers": [container()], "tolerations": [{"key": "k", "effect": "Never"}]}),
        'spec.tolerations[0].effect: Unsupported value: "Never": supported values:'
        ' "NoExecute", "NoSchedule", "PreferNoSchedule"',
    ),
    (
        "toleration without a key must be Exists",
        pod({"containers": [container()], "tolerations": [{"value": "v"}]}),
        'spec.tolerations[0].operator: Invalid value: "": operator must be Exists when `key` is'
        ' empty, which means "match all values and all keys"',
    ),
    (
        "toleration seconds only for NoExecute",
        pod(
            {
                "containers": [container()],
                "tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}],
            }
        ),
        'spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be'
        " 'NoExecute' when `tolerationSeconds` is set",
    ),
    (
        "pod name too long",
        obj("Pod", {"spec": {"containers": [container()]}}, name="a" * 254),
        f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters',
    ),
    (
        "label key invalid",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "labels": {"bad key": "v"}},
            }
        ),
        "metadata.labels: Invalid value: \"bad key\": name part must be made of letters, digits, '-', '_' or '.', "
        "and must start and end with a letter or digit (e.g. 'MyName', or 'my.name', or '123-abc')",
    ),
    (
        "label key prefix invalid",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "labels": {"Example.com/app": "v"}},
            }
        ),
        f'metadata.labels: Invalid value: "Example.com/app": prefix part {SUBDOMAIN}',
    ),
    (
        "label value invalid",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "labels": {"app": "-web"}},
            }
        ),
        'metadata.labels: Invalid value: "-web": a valid label value must be empty or made of letters, digits, '
        "'-', '_' or '.', and must start and end with a letter or digit (e.g. 'MyValue', or 'my_value')",
    ),
    (
        "label value too long",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "labels": {"app": "v" * 64}},
            }
        ),
        f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 characters',
    ),
    (
        "labels valid (prefix, empty value)",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "labels": {"example.com/App_1": "", "tier": "Front.end"}},
            }
        ),
        None,
    ),
    (
        "annotation key invalid",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "annotations": {"a/b/c": "x"}},
            }
        ),
        'metadata.annotations: Invalid value: "a/b/c": a qualified name must be a name part with an optional '
        "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ),
    (
        "annotation value may be anything",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": "a",
                    "annotations": {"haproxy.router.openshift.io/timeout": "5 s!"},
                },
            }
        ),
        None,
    ),
    (
        "annotations too large",
        parse_object(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "annotations": {"big": "x" * 262142}},
            }
        ),
        "metadata.annotations: Too long: must have at most 262144 bytes",
    ),
    # --- Service
    (
        "service valid",
        service({"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}),
        None,
    ),
    (
        "service name is a label",
        service({"ports": [PORT80]}, name="web.v1"),
        f'metadata.name: Invalid value: "web.v1": {LABEL}',
    ),
    ("service needs ports", service({"selector": {"app": "web"}}), "spec.ports: Required value"),
    ("headless service needs no ports", service({"clusterIP": "None"}), None),
    (
        "service port 0",
        service({"ports": [{"port": 0}]}),
        f"spec.ports[0].port: Invalid value: 0: {PORT_RANGE}",
    ),
    (
        "service port 65536",
        service({"ports": [{"port": 65536}]}),
        f"spec.ports[0].port: Invalid value: 65536: {PORT_RANGE}",
    ),
    (
        "service protocol",
        service({"ports": [{"port": 53, "protocol": "ICMP"}]}),
        'spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "service UDP and SCTP",
        service(
            {
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                    {"name": "s", "port": 9, "protocol": "SCTP"},
                ]
            }
        ),
        None,
    ),
    (
        "service port names required when several",
        service({"ports": [{"name": "http", "port": 80}, {"port": 443}]}),
        "spec.ports[1].name: Required value",
    ),
    (
        "service port name is a label",
        service({"ports": [{"name": "HTTP", "port": 80}]}),
        f'spec.ports[0].name: Invalid value: "HTTP": {LABEL}',
    ),
    (
        "service port names unique",
        service({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}),
        'spec.ports[1].name: Duplicate value: "http"',
    ),
    (
        "service port numbers unique per protocol",
        service({"ports": [{"name": "a", "port": 53}, {"name": "b", "port": 53}]}),
        'spec.ports[1]: Duplicate value: "53/TCP"',
    ),
    (
        "same port, other protocol",
        service(
            {"ports": [{"name": "a", "port": 53}, {"name": "b", "port": 53, "protocol": "UDP"}]}
        ),
        None,
    ),
    ("service targetPort name", service({"ports": [{"port": 80, "targetPort": "http-alt"}]}), None),
    (
        "service targetPort bad name",
        service({"ports": [{"port": 80, "targetPort": "http--alt"}]}),
        'spec.ports[0].targetPort: Invalid value: "http--alt": must not contain consecutive hyphens',
    ),
    (
        "service targetPort range",
        service({"ports": [{"port": 80, "targetPort": 99999}]}),
        f"spec.ports[0].targetPort: Invalid value: 99999: {PORT_RANGE}",
    ),
    ("sessionAffinity ClientIP", service({"ports": [PORT80], "sessionAffinity": "ClientIP"}), None),
    (
        "sessionAffinity unknown",
        service({"ports": [PORT80], "sessionAffinity": "Cookie"}),
        'spec.sessionAffinity: Unsupported value: "Cookie": supported values: "ClientIP", "None"',
    ),
    (
        "affinity timeout 0",
        service(
            {
                "ports": [PORT80],
                "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}},
            }
        ),
        "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than or equal to 86400",
    ),
    (
        "affinity timeout 86401",
        service(
            {
                "ports": [PORT80],
                "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 86401}},
            }
        ),
        "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than or equal to 86400",
    ),
    (
        "affinity timeout 86400",
        service(
            {
                "ports": [PORT80],
                "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 86400}},
            }
        ),
        None,
    ),
    (
        "affinity config without ClientIP",
        service({"ports": [PORT80], "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}}),
        "spec.sessionAffinityConfig: Forbidden: must not be set when sessionAffinity is None",
    ),
    ("clusterIP valid", service({"ports": [PORT80], "clusterIP": "127.30.0.10"}), None),
    ("clusterIP IPv6", service({"ports": [PORT80], "clusterIP": "fd00::10"}), None),
    (
        "clusterIP invalid",
        service({"ports": [PORT80], "clusterIP": "10.0.0.300"}),
        'spec.clusterIP: Invalid value: "10.0.0.300": must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    (
        "clusterIP None on NodePort",
        service({"ports": [PORT80], "clusterIP": "None", "type": "NodePort"}),
        "spec.clusterIP: Invalid value: \"None\": may not be set to 'None' for NodePort services",
    ),
    (
        "service type unknown",
        service({"ports": [PORT80], "type": "Internal"}),
        'spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
    ),
    (
        "ExternalName needs externalName",
        service({"type": "ExternalName"}),
        "spec.externalName: Required value",
    ),
    (
        "ExternalName valid",
        service({"type": "ExternalName", "externalName": "db.example.com."}),
        None,
    ),
    (
        "ExternalName invalid",
        service({"type": "ExternalName", "externalName": "db_1.example.com"}),
        f'spec.externalName: Invalid value: "db_1.example.com": {SUBDOMAIN}',
    ),
    (
        "ExternalName with clusterIP",
        service(
            {"type": "ExternalName", "externalName": "db.example.com", "clusterIP": "10.0.0.1"}
        ),
        "spec.clusterIP: Forbidden: may not be set for ExternalName services",
    ),
    (
        "nodePort on ClusterIP",
        service({"ports": [{"port": 80, "nodePort": 30080}]}),
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
    ),
    (
        "nodePort on NodePort",
        service({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
        None,
    ),
    (
        "selector value invalid",
        service({"ports": [PORT80], "selector": {"app": "a b"}}),
        "spec.selector: Invalid value: \"a b\": a valid label value must be empty or made of letters, digits, '-', '_' or '.', and must start and end with a letter or digit (e.g. 'MyValue', or 'my_value')",
    ),
    (
        "externalIPs",
        service({"ports": [PORT80], "externalIPs": ["1.2.3.4", "nope"]}),
        'spec.externalIPs[1]: Invalid value: "nope": must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    # --- Pod
    (
        "pod valid",
        pod({"containers": [container(ports=[{"name": "http", "containerPort": 8080}])]}),
        None,
    ),
    ("pod needs a container", pod({"containers": []}), "spec.containers: Required value"),
    (
        "container name is a label",
        pod({"containers": [container(name="App")]}),
        f'spec.containers[0].name: Invalid value: "App": {LABEL}',
    ),
    (
        "container names unique",
        pod({"containers": [container(), container()]}),
        'spec.containers[1].name: Duplicate value: "app"',
    ),
    (
        "container port 0",
        pod({"containers": [container(ports=[{"containerPort": 0}])]}),
        f"spec.containers[0].ports[0].containerPort: Invalid value: 0: {PORT_RANGE}",
    ),
    (
        "container port 70000",
        pod({"containers": [container(ports=[{"containerPort": 70000}])]}),
        f"spec.containers[0].ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}",
    ),
    (
        "container port name too long",
        pod(
            {
                "containers": [
                    container(ports=[{"name": "a-very-long-port-name", "containerPort": 80}])
                ]
            }
        ),
        'spec.containers[0].ports[0].name: Invalid value: "a-very-long-port-name": must be no more than 15 characters',
    ),
    (
        "container port name needs a letter",
        pod({"containers": [container(ports=[{"name": "8080", "containerPort": 80}])]}),
        'spec.containers[0].ports[0].name: Invalid value: "8080": must contain at least one letter (a-z)',
    ),
    (
        "container port names unique in the pod",
        pod(
            {
                "containers": [
                    container(ports=[{"name": "http", "containerPort": 80}]),
                    container(name="b", ports=[{"name": "http", "containerPort": 81}]),
                ]
            }
        ),
        'spec.containers[1].ports[0].name: Duplicate value: "http"',
    ),
    (
        "container port protocol",
        pod({"containers": [container(ports=[{"containerPort": 80, "protocol": "tcp"}])]}),
        'spec.containers[0].ports[0].protocol: Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "restartPolicy",
        pod({"containers": [container()], "restartPolicy": "Sometimes"}),
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ),
    ("restartPolicy Never", pod({"containers": [container()], "restartPolicy": "Never"}), None),
    (
        "probe without handler",
        pod({"containers": [container(readinessProbe={"periodSeconds": 5})]}),
        "spec.containers[0].readinessProbe: Required value: must specify a handler type",
    ),
    (
        "probe with two handlers",
        pod(
            {
                "containers": [
                    container(readinessProbe={"tcpSocket": {"port": 80}, "httpGet": {"port": 80}})
                ]
            }
        ),
        "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
    ),
    (
        "probe httpGet valid",
        pod(
            {
                "containers": [
                    container(readinessProbe={"httpGet": {"path": "/healthz", "port": "http"}})
                ]
            }
        ),
        None,
    ),
    (
        "probe exec valid",
        pod({"containers": [container(livenessProbe={"exec": {"command": ["true"]}})]}),
        None,
    ),
    (
        "probe port range",
        pod({"containers": [container(readinessProbe={"tcpSocket": {"port": 0}})]}),
        f"spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 0: {PORT_RANGE}",
    ),
    (
        "probe period 0 (shiftnet)",
        pod(
            {
                "containers": [
                    container(readinessProbe={"tcpSocket": {"port": 80}, "periodSeconds": 0})
                ]
            }
        ),
        "spec.containers[0].readinessProbe.periodSeconds: Invalid value: 0: must be greater than or equal to 1",
    ),
    (
        "liveness successThreshold",
        pod(
            {
                "containers": [
                    container(livenessProbe={"tcpSocket": {"port": 80}, "successThreshold": 2})
                ]
            }
        ),
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
    ),
    (
        "env name",
        pod({"containers": [container(env=[{"name": "1BAD", "value": "x"}])]}),
        "spec.containers[0].env[0].name: Invalid value: \"1BAD\": a valid environment variable name must be made of letters, digits, '_', '-' or '.', and must not start with a digit",
    ),
    (
        "pod hostname",
        pod({"containers": [container()], "hostname": "web_1"}),
        f'spec.hostname: Invalid value: "web_1": {LABEL}',
    ),
    # --- Endpoints
    (
        "endpoints valid",
        obj(
            "Endpoints",
            {"subsets": [{"addresses": [{"ip": "127.10.1.5"}], "ports": [{"port": 8080}]}]},
        ),
        None,
    ),
    ("endpoints empty", obj("Endpoints", {"subsets": []}), None),
    (
        "endpoints IP",
        obj("Endpoints", {"subsets": [{"addresses": [{"ip": "10.1.2"}], "ports": [{"port": 80}]}]}),
        'subsets[0].addresses[0].ip: Invalid value: "10.1.2": must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    (
        "endpoints not-ready IP",
        obj("Endpoints", {"subsets": [{"notReadyAddresses": [{"ip": "x"}]}]}),
        'subsets[0].notReadyAddresses[0].ip: Invalid value: "x": must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    (
        "endpoints port",
        obj(
            "Endpoints", {"subsets": [{"addresses": [{"ip": "10.1.0.2"}], "ports": [{"port": 0}]}]}
        ),
        f"subsets[0].ports[0].port: Invalid value: 0: {PORT_RANGE}",
    ),
    (
        "endpoints port names required when several",
        obj(
            "Endpoints",
            {
                "subsets": [
                    {
                        "addresses": [{"ip": "10.1.0.2"}],
                        "ports": [{"name": "a", "port": 1}, {"port": 2}],
                    }
                ]
            },
        ),
        "subsets[0].ports[1].name: Required value",
    ),
    (
        "endpoints subset needs addresses",
        obj("Endpoints", {"subsets": [{"ports": [{"port": 80}]}]}),
        "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
    ),
    # --- Node
    (
        "node valid",
        obj(
            "Node",
            {"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}},
            name="node-1.example.com",
            namespace=None,
        ),
        None,
    ),
    (
        "node name uppercase",
        obj("Node", {}, name="Node1", namespace=None),
        f'metadata.name: Invalid value: "Node1": {SUBDOMAIN}',
    ),
    (
        "node podCIDR",
        obj("Node", {"spec": {"podCIDR": "10.1.2.0/33"}}, namespace=None),
        'spec.podCIDR: Invalid value: "10.1.2.0/33": must be a valid CIDR (e.g. 10.1.0.0/16)',
    ),
    # --- HostSubnet
    (
        "hostsubnet valid",
        obj(
            "HostSubnet",
            {"host": "node-1", "hostIP": "192.168.1.10", "subnet": "10.1.2.0/24"},
            name="node-1",
            namespace=None,
        ),
        None,
    ),
    (
        "hostsubnet subnet",
        obj(
            "HostSubnet",
            {"host": "node-1", "hostIP": "192.168.1.10", "subnet": "10.1.2.0"},
            name="node-1",
            namespace=None,
        ),
        'subnet: Invalid value: "10.1.2.0": must be a valid CIDR with a prefix length (e.g. 10.1.2.0/32)',
    ),
    (
        "hostsubnet subnet not canonical",
        obj(
            "HostSubnet",
            {"host": "node-1", "hostIP": "192.168.1.10", "subnet": "10.1.2.7/24"},
            name="node-1",
            namespace=None,
        ),
        'subnet: Invalid value: "10.1.2.7/24": is not in canonical form (should be 10.1.2.0/24)',
    ),
    (
        "hostsubnet hostIP",
        obj(
            "HostSubnet",
            {"host": "node-1", "hostIP": "192.168.1", "subnet": "10.1.2.0/24"},
            name="node-1",
            namespace=None,
        ),
        'hostIP: Invalid value: "192.168.1": must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ),
    (
        "hostsubnet host matches name",
        obj(
            "HostSubnet",
            {"host": "node-2", "hostIP": "192.168.1.10", "subnet": "10.1.2.0/24"},
            name="node-1",
            namespace=None,
        ),
        'host: Invalid value: "node-2": must be the same as metadata.name: "node-1"',
    ),
    (
        "hostsubnet subnet required",
        obj("HostSubnet", {"host": "node-1"}, name="node-1", namespace=None),
        "subnet: Required value",
    ),
    # --- ClusterNetwork
    (
        "clusternetwork valid",
        obj(
            "ClusterNetwork",
            {
                "clusterNetworks": [{"CIDR": "10.1.0.0/16", "hostSubnetLength": 8}],
                "serviceNetwork": "172.30.0.0/16",
            },
            name="default",
            namespace=None,
        ),
        None,
    ),
    (
        "clusternetwork legacy fields",
        obj(
            "ClusterNetwork",
            {"network": "127.10.0.0/16", "hostsubnetlength": 8, "serviceNetwork": "127.30.0.0/16"},
            name="default",
            namespace=None,
        ),
        None,
    ),
    (
        "clusternetwork CIDR",
        obj(
            "ClusterNetwork",
            {"clusterNetworks": [{"CIDR": "10.1.0.0/40"}]},
            name="default",
            namespace=None,
        ),
        'clusterNetworks[0].CIDR: Invalid value: "10.1.0.0/40": must be a valid CIDR (e.g. 10.1.0.0/16)',
    ),
    (
        "clusternetwork hostSubnetLength",
        obj(
            "ClusterNetwork",
            {"clusterNetworks": [{"CIDR": "10.1.0.0/24", "hostSubnetLength": 9}]},
            name="default",
            namespace=None,
        ),
        "clusterNetworks[0].hostSubnetLength: Invalid value: 9: must be between 2 and 8 (the host bits of 10.1.0.0/24)",
    ),
    (
        "clusternetwork overlaps service network",
        obj(
            "ClusterNetwork",
            {"clusterNetworks": [{"CIDR": "10.0.0.0/8"}], "serviceNetwork": "10.30.0.0/16"},
            name="default",
            namespace=None,
        ),
        'serviceNetwork: Invalid value: "10.30.0.0/16": service network overlaps with cluster network clusterNetworks[0].CIDR',
    ),
    (
        "clusternetwork networks overlap",
        obj(
            "ClusterNetwork",
            {"clusterNetworks": [{"CIDR": "10.1.0.0/16"}, {"CIDR": "10.1.128.0/17"}]},
            name="default",
            namespace=None,
        ),
        'clusterNetworks[1].CIDR: Invalid value: "10.1.128.0/17": overlaps with clusterNetworks[0].CIDR',
    ),
    (
        "clusternetwork needs a network",
        obj("ClusterNetwork", {}, name="default", namespace=None),
        "clusterNetworks: Required value",
    ),
]


@pytest.mark.parametrize(("what", "resource", "want"), OTHER_CASES, ids=[c[0] for c in OTHER_CASES])
def test_other_kinds(what: str, resource: Resource, want: str | None) -> None:
    found = errors(resource)
    assert (str(found[0]) if found else None) == want


def test_unknown_field_names_the_path() -> None:
    with pytest.raises(InvalidObject) as exc:
        obj("Service", {"spec": {"ports": [{"port": 80, "tragetPort": 8080}]}})
    assert exc.value.field == "spec.ports[0].tragetPort"
    assert exc.value.message == "unknown field"
