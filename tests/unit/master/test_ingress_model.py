"""Ingress -> Routes as OpenShift's ingress-to-route controller: class, paths, ports, TLS, edits."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from shiftnet.api import Ingress, IngressClass, Route, Secret, Service, parse_object
from shiftnet.master.ingress_model import (
    CONTROLLER,
    IngressPlan,
    manages,
    owner_ingress,
    plan_ingress,
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def ingress(
    paths: list[dict[str, Any]] | None = None,
    *,
    host: str = "www.example.com",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Ingress:
    if paths is None:
        paths = [path()]
    doc = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": "shop",
            "namespace": "team",
            "uid": "uid-1",
            "annotations": annotations or {},
            "labels": labels or {},
        },
        "spec": {"rules": [{"host": host, "http": {"paths": paths}}], **spec},
    }
    obj = parse_object(doc)
    assert isinstance(obj, Ingress)
    return obj


def path(p: str = "/", kind: str = "Prefix", svc: str = "web", **port: Any) -> dict[str, Any]:
    return {
        "path": p,
        "pathType": kind,
        "backend": {"service": {"name": svc, "port": port or {"number": 80}}},
    }


def service(name: str = "web", ports: list[dict[str, Any]] | None = None) -> Service:
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "team"},
            "spec": {"ports": ports or [{"name": "http", "port": 80, "targetPort": 8080}]},
        }
    )
    assert isinstance(obj, Service)
    return obj


def secret(name: str = "shop-tls", type_: str = "kubernetes.io/tls", **data: str) -> Secret:
    values = data or {"tls.crt": "CERT", "tls.key": "KEY"}
    obj = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": "team"},
            "type": type_,
            "data": {k.replace("_", "."): b64(v) for k, v in values.items()},
        }
    )
    assert isinstance(obj, Secret)
    return obj


SERVICES = {"web": service()}


def plan(ing: Ingress, owned: list[Route] | None = None, **kw: Any) -> IngressPlan:
    services = kw.get("services", SERVICES)
    secrets = {s.name: s for s in kw.get("secrets", [])}
    return plan_ingress(ing, services, secrets, owned or [])


def only_route(p: IngressPlan) -> Route:
    assert len(p.create) == 1, p
    return p.create[0]


def stored(route: Route, name: str = "shop-abcde") -> Route:
    """``route`` as the store has it after creation: named, versioned, maybe admitted."""
    out = route.model_copy(deep=True)
    out.metadata.name = name
    out.metadata.generate_name = None
    out.metadata.resource_version = "7"
    return out


# ------------------------------------------------------------ class selection


def klass(name: str, controller: str, default: bool = False, created: str = "") -> IngressClass:
    ann = {"ingressclass.kubernetes.io/is-default-class": "true"} if default else {}
    obj = parse_object(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": name, "annotations": ann, "creationTimestamp": created or None},
            "spec": {"controller": controller},
        }
    )
    assert isinstance(obj, IngressClass)
    return obj


OURS = klass("openshift-default", CONTROLLER)
NGINX = klass("nginx", "k8s.io/ingress-nginx")

CLASS_CASES = [
    ("no class, no default class", {}, None, None, True),
    (
        "no class, our class is default",
        {"openshift-default": klass("openshift-default", CONTROLLER, True)},
        None,
        None,
        True,
    ),
    (
        "no class, another default",
        {"nginx": klass("nginx", "k8s.io/ingress-nginx", True)},
        None,
        None,
        False,
    ),
    ("openshift-default by field", {"openshift-default": OURS}, "openshift-default", None, True),
    ("class that does not exist", {}, "openshift-default", None, False),
    ("another controller's class", {"nginx": NGINX}, "nginx", None, False),
    (
        "annotation wins over field",
        {"nginx": NGINX, "openshift-default": OURS},
        None,
        "nginx",
        False,
    ),
    ("annotation naming ours", {"openshift-default": OURS}, None, "openshift-default", True),
    (
        "newest default wins",
        {
            "a": klass("a", CONTROLLER, True, "2026-01-01T00:00:00Z"),
            "b": klass("b", "k8s.io/ingress-nginx", True, "2026-02-01T00:00:00Z"),
        },
        None,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("classes", "field", "annotation", "expected"),
    [c[1:] for c in CLASS_CASES],
    ids=[c[0] for c in CLASS_CASES],
)
def test_which_ingresses_are_served(
    classes: dict[str, IngressClass], field: str | None, annotation: str | None, expected: bool
) -> None:
    ann = {"kubernetes.io/ingress.class": annotation} if annotation else {}
    spec = {"ingressClassName": field} if field else {}
    assert manages(ingress(annotations=ann, **spec), classes) is expected


# ------------------------------------------------------------ paths


@pytest.mark.parametrize(
    ("kind", "p", "route_path"),
    [
        ("Prefix", "/api", "/api"),
        ("Prefix", "/", "/"),
        ("ImplementationSpecific", "/a/b", "/a/b"),
        ("ImplementationSpecific", "", ""),
    ],
)
def test_prefix_and_implementation_specific_paths_are_the_route_path(
    kind: str, p: str, route_path: str
) -> None:
    route = only_route(plan(ingress([path(p, kind)])))
    assert route.spec.path == route_path
    assert route.spec.host == "www.example.com"
    assert route.spec.to.name == "web"


def test_an_exact_path_gets_no_route_and_says_why() -> None:
    p = plan(ingress([path("/", "Prefix"), path("/exact", "Exact")]))
    assert [r.spec.path for r in p.create] == ["/"]
    assert p.incomplete == ["Unsupported exact path type in rule at index 0, path index 1"]


def test_an_exact_path_replacing_a_prefix_deletes_its_route() -> None:
    before = stored(only_route(plan(ingress([path("/x")]))))
    p = plan(ingress([path("/x", "Exact")]), [before])
    assert p.delete == [before.name] and not p.create and not p.update


def test_rules_without_host_or_http_and_non_service_backends_get_no_route() -> None:
    doc = ingress().to_dict()
    doc["spec"]["rules"] = [
        {"http": {"paths": [path()]}},
        {"host": "a.example.com"},
        {
            "host": "b.example.com",
            "http": {
                "paths": [
                    {
                        "path": "/",
                        "pathType": "Prefix",
                        "backend": {"resource": {"kind": "Bucket", "name": "b"}},
                    }
                ]
            },
        },
    ]
    ing = parse_object(doc)
    assert isinstance(ing, Ingress)
    p = plan(ing)
    assert p.create == []
    assert p.incomplete == [
        "Missing host field in rule at index 0",
        "Missing http field in rule at index 1",
        "Missing backend service field in rule at index 2, path index 0",
    ]


def test_default_backend_is_ignored() -> None:
    doc = ingress().to_dict()
    doc["spec"] = {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}
    ing = parse_object(doc)
    assert isinstance(ing, Ingress)
    p = plan(ing)
    assert p.create == [] and p.incomplete == [] and p.delete == []


def test_one_route_per_host_and_path_named_after_the_ingress_and_owned_by_it() -> None:
    ing = ingress(
        [path("/a"), path("/b")],
        labels={"app": "shop"},
        annotations={"haproxy.router.openshift.io/timeout": "5s"},
    )
    p = plan(ing)
    assert [r.spec.path for r in p.create] == ["/a", "/b"]
    for r in p.create:
        assert r.metadata.generate_name == "shop-"
        assert r.metadata.namespace == "team"
        assert r.metadata.labels == {"app": "shop"}
        assert r.metadata.annotations == {"haproxy.router.openshift.io/timeout": "5s"}
        refs = [ref.to_dict() for ref in r.metadata.owner_references or []]
        assert refs == [
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "name": "shop",
                "uid": "uid-1",
                "controller": True,
            }
        ]
        assert owner_ingress(r) == "shop"
        assert r.spec.tls is None and r.spec.wildcard_policy == "None"


def test_a_wildcard_host_becomes_a_subdomain_route() -> None:
    route = only_route(plan(ingress(host="*.apps.example.com")))
    assert route.spec.host == "wildcard.apps.example.com"
    assert route.spec.wildcard_policy == "Subdomain"


# ------------------------------------------------------------ ports

PORT_CASES = [
    ("number of a named port", [{"name": "http", "port": 80}], {"number": 80}, "http"),
    (
        "name",
        [{"name": "http", "port": 80}, {"name": "admin", "port": 9000}],
        {"name": "admin"},
        "admin",
    ),
    ("number of the only unnamed port", [{"port": 80}], {"number": 80}, None),
]


@pytest.mark.parametrize(
    ("ports", "asked", "target"), [c[1:] for c in PORT_CASES], ids=[c[0] for c in PORT_CASES]
)
def test_service_port_by_number_or_name(
    ports: list[dict[str, Any]], asked: dict[str, Any], target: str | None
) -> None:
    route = only_route(plan(ingress([path(**asked)]), services={"web": service(ports=ports)}))
    assert (route.spec.port.target_port if route.spec.port else None) == target


@pytest.mark.parametrize(
    ("services", "asked", "why"),
    [
        ({}, {"number": 80}, 'Backend service "web" not found'),
        (SERVICES, {"number": 81}, 'No valid target port for backend service "web"'),
        (SERVICES, {"name": "https"}, 'No valid target port for backend service "web"'),
    ],
)
def test_a_missing_service_or_port_gets_no_route(
    services: dict[str, Service], asked: dict[str, Any], why: str
) -> None:
    p = plan(ingress([path(**asked)]), services=services)
    assert p.create == []
    assert p.incomplete == [f"{why} at index 0, path index 0"]


# ------------------------------------------------------------ TLS

TLS_FOR_HOST = [{"hosts": ["www.example.com"], "secretName": "shop-tls"}]


def test_no_tls_section_is_a_plain_route() -> None:
    assert only_route(plan(ingress(), secrets=[secret()])).spec.tls is None


def test_a_tls_secret_gives_an_edge_route_with_its_certificate() -> None:
    route = only_route(plan(ingress(tls=TLS_FOR_HOST), secrets=[secret()]))
    assert route.spec.tls is not None
    assert route.spec.tls.to_dict() == {
        "termination": "edge",
        "certificate": "CERT",
        "key": "KEY",
        "insecureEdgeTerminationPolicy": "Redirect",
    }


def test_tls_for_another_host_leaves_the_rule_plain() -> None:
    tls = [{"hosts": ["other.example.com"], "secretName": "shop-tls"}]
    assert only_route(plan(ingress(tls=tls), secrets=[secret()])).spec.tls is None


def test_an_empty_tls_entry_turns_on_edge_with_the_router_certificate() -> None:
    route = only_route(plan(ingress(tls=[{}])))
    assert route.spec.tls is not None and route.spec.tls.termination == "edge"
    assert route.spec.tls.certificate is None


@pytest.mark.parametrize(
    "secrets",
    [[], [secret(type_="Opaque")], [secret(tls_crt="CERT")]],
    ids=["missing", "wrong type", "no key"],
)
def test_a_bad_tls_secret_gets_no_route(secrets: list[Secret]) -> None:
    p = plan(ingress(tls=TLS_FOR_HOST), secrets=secrets)
    assert p.create == []
    assert p.incomplete == [
        'Invalid or missing TLS secret for rule host "www.example.com" at index 0, path index 0'
    ]


@pytest.mark.parametrize(
    ("termination", "with_secret", "expected"),
    [
        ("edge", False, {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}),
        (
            "passthrough",
            True,
            {"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"},
        ),
        (
            "reencrypt",
            True,
            {
                "termination": "reencrypt",
                "certificate": "CERT",
                "key": "KEY",
                "destinationCACertificate": "CA",
                "insecureEdgeTerminationPolicy": "Redirect",
            },
        ),
        (
            "bogus",
            True,
            {
                "termination": "edge",
                "certificate": "CERT",
                "key": "KEY",
                "insecureEdgeTerminationPolicy": "Redirect",
            },
        ),
    ],
)
def test_the_termination_annotation(
    termination: str, with_secret: bool, expected: dict[str, str]
) -> None:
    ann = {
        "route.openshift.io/termination": termination,
        "route.openshift.io/destination-ca-certificate-secret": "backend-ca",
    }
    secrets = [secret(), secret("backend-ca", "Opaque", tls_crt="CA")]
    ing = ingress([path()], annotations=ann, tls=TLS_FOR_HOST if with_secret else [])
    route = only_route(plan(ing, secrets=secrets))
    assert route.spec.tls is not None and route.spec.tls.to_dict() == expected


# ------------------------------------------------------------ updates and hand edits


def test_routes_that_match_are_left_alone_and_others_deleted() -> None:
    first = stored(only_route(plan(ingress())))
    stray = stored(only_route(plan(ingress([path("/old")]))), "shop-zzzzz")
    p = plan(ingress(), [first, stray])
    assert p.create == [] and p.update == []
    assert p.unchanged == [first.name] and p.delete == [stray.name]


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: setattr(r.spec.to, "name", "other"),
        lambda r: setattr(r.spec, "port", None),
        lambda r: setattr(r.spec, "tls", None),
        lambda r: r.metadata.annotations.update({"x": "y"}),
        lambda r: r.spec.alternate_backends.append(r.spec.to.model_copy()),
    ],
    ids=["service", "port", "tls", "annotation", "alternate backend"],
)
def test_a_hand_edit_is_put_back(edit: Any) -> None:
    ing = ingress(tls=TLS_FOR_HOST)
    good = stored(only_route(plan(ing, secrets=[secret()])))
    edited = good.model_copy(deep=True)
    edit(edited)
    p = plan(ing, [edited], secrets=[secret()])
    assert [r.name for r in p.update] == [good.name]
    assert p.update[0].spec.to_dict() == good.spec.to_dict()
    assert p.update[0].metadata.resource_version == "7"


def test_fields_openshift_leaves_to_the_user_are_kept() -> None:
    ing = ingress(tls=TLS_FOR_HOST, annotations={"route.openshift.io/termination": "reencrypt"})
    good = stored(only_route(plan(ing, secrets=[secret()])))
    edited = good.model_copy(deep=True)
    edited.spec.to.weight = 7
    assert edited.spec.tls is not None
    edited.spec.tls.insecure_edge_termination_policy = "Allow"
    edited.spec.tls.ca_certificate = "CHAIN"
    edited.spec.tls.destination_ca_certificate = "MINE"
    edited.metadata.labels = {"hand": "made"}
    p = plan(ing, [edited], secrets=[secret()])
    assert p.update == [] and p.unchanged == [good.name]


def test_labels_follow_the_ingress_only_with_reconcile_labels() -> None:
    ing = ingress(labels={"app": "shop"})
    good = stored(only_route(plan(ing)))
    edited = good.model_copy(deep=True)
    edited.metadata.labels = {"hand": "made"}
    assert plan(ing, [edited]).update == []
    ann = {"route.openshift.io/reconcile-labels": "TRUE"}
    ing2 = ingress(labels={"app": "shop"}, annotations=ann)
    edited.metadata.annotations = dict(ann)
    p = plan(ing2, [edited])
    assert [r.metadata.labels for r in p.update] == [{"app": "shop"}]
    bad = plan(ingress(annotations={"route.openshift.io/reconcile-labels": "yes"}))
    assert bad.warnings == [
        "Invalid value on annotation 'route.openshift.io/reconcile-labels': 'yes'"
    ]


def test_a_changed_ingress_updates_its_route_in_place() -> None:
    good = stored(only_route(plan(ingress())))
    p = plan(ingress([path(svc="web2")]), [good], services={**SERVICES, "web2": service("web2")})
    assert [(r.name, r.spec.to.name) for r in p.update] == [(good.name, "web2")]


# ------------------------------------------------------------ status


def admitted(route: Route, hostname: str, status: str = "True") -> Route:
    out = route.model_copy(deep=True)
    out.status = type(route.status).model_validate(
        {
            "ingress": [
                {
                    "host": route.spec.host,
                    "routerName": "default",
                    "routerCanonicalHostname": hostname,
                    "conditions": [{"type": "Admitted", "status": status}],
                }
            ]
        }
    )
    return out


def test_status_names_the_routers_that_admitted_the_routes() -> None:
    good = admitted(stored(only_route(plan(ingress()))), "router.shiftnet.local")
    p = plan(ingress(), [good])
    assert [e.to_dict() for e in p.load_balancer or []] == [{"hostname": "router.shiftnet.local"}]
    refused = admitted(good, "router.shiftnet.local", "False")
    assert plan(ingress(), [refused]).load_balancer is None


def test_status_drops_the_router_of_a_deleted_route_and_is_unchanged_when_equal() -> None:
    good = admitted(stored(only_route(plan(ingress()))), "router.shiftnet.local")
    doc = ingress([path(svc="gone")]).to_dict()
    doc["status"] = {"loadBalancer": {"ingress": [{"hostname": "router.shiftnet.local"}]}}
    ing = parse_object(doc)
    assert isinstance(ing, Ingress)
    p = plan(ing, [good])
    assert p.delete == [good.name]
    assert p.load_balancer == []
    doc["spec"] = ingress().to_dict()["spec"]
    same = parse_object(doc)
    assert isinstance(same, Ingress)
    assert plan(same, [good]).load_balancer is None


def test_the_plan_does_not_depend_on_the_order_of_owned_routes() -> None:
    ing = ingress([path("/a"), path("/b")])
    routes = [stored(r, f"shop-{i}") for i, r in enumerate(plan(ing).create)]
    stray = stored(only_route(plan(ingress([path("/c")]))), "shop-9")
    one = plan(ing, [*routes, stray])
    two = plan(ing, [stray, *reversed(routes)])
    assert one == two
