"""Pure: the Routes an Ingress stands for, as OpenShift's ingress-to-route controller keeps them.

Rules (OpenShift's ``route-controller-manager``, ``pkg/route/ingress``):

* **Which Ingresses.** One naming a class (the ``kubernetes.io/ingress.class``
  annotation wins over ``spec.ingressClassName``) is served only when that
  IngressClass exists with controller ``openshift.io/ingress-to-route``. One
  naming no class is served, except when another controller's IngressClass is
  the cluster default (``ingressclass.kubernetes.io/is-default-class: "true"``):
  Kubernetes' admission would have given the Ingress that class when it was
  created, and shiftnet has no admission step, so the default is read here.
* **One Route per rule host and path**, named ``<ingress>-<5 random characters>``,
  owned by the Ingress (``ownerReferences``, ``controller: true``), with the
  Ingress's labels and annotations. A wildcard host ``*.example.com`` becomes
  ``wildcard.example.com`` with ``wildcardPolicy: Subdomain``.
* **Paths.** ``Prefix`` and ``ImplementationSpecific`` paths are the Route's
  path as written; ``Exact`` is refused (no Route, a note). Rules without a
  host or ``http``, and paths without a Service backend, get no Route either.
  ``spec.defaultBackend`` is ignored.
* **Ports.** The backend's port, by name or number, must be a port of the
  Service; the Route targets that port's name, or every port when the matched
  port has no name. A missing Service or port: no Route, a note.
* **TLS.** A ``spec.tls`` entry listing the rule's host names a
  ``kubernetes.io/tls`` Secret with ``tls.crt`` and ``tls.key``: an edge Route
  with that certificate and key, plain HTTP redirected. A missing or wrong
  Secret: no Route, a note. ``route.openshift.io/termination`` (edge,
  reencrypt, passthrough) turns TLS on even without a Secret and picks the
  termination; passthrough carries no certificate; reencrypt takes
  ``destinationCACertificate`` from the ``tls.crt`` of the Secret named by
  ``route.openshift.io/destination-ca-certificate-secret``.
* **Hand edits are put back**: every field the Ingress decides is rewritten;
  the ones OpenShift leaves to the user are kept (``spec.to.weight``,
  ``tls.caCertificate``, ``tls.insecureEdgeTerminationPolicy``, and a
  reencrypt ``destinationCACertificate`` when no annotation names one). Labels
  are rewritten only with ``route.openshift.io/reconcile-labels: "true"``.
* **Status.** ``status.loadBalancer.ingress`` lists, by ``hostname``, the
  canonical host names of the routers that admitted the Ingress's Routes:
  the stored list, less the routers of Routes deleted now, plus those of
  Routes that already match.

No I/O, no clock; the same inputs give the same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shiftnet.api import Ingress, IngressClass, Route, Secret, Service
from shiftnet.api.base import ObjectMeta, OwnerReference
from shiftnet.api.ingress import HTTPIngressPath, IngressLoadBalancerIngress, IngressRule
from shiftnet.api.route import RoutePort, RouteSpec, RouteTargetReference, TLSConfig
from shiftnet.api.secret import TLS, TLS_CERT_KEY, TLS_PRIVATE_KEY_KEY

CONTROLLER = "openshift.io/ingress-to-route"
DEFAULT_CLASS = "openshift-default"
TERMINATION_ANNOTATION = "route.openshift.io/termination"
DESTINATION_CA_ANNOTATION = "route.openshift.io/destination-ca-certificate-secret"
RECONCILE_LABELS_ANNOTATION = "route.openshift.io/reconcile-labels"
OWNER_API_VERSIONS = ("networking.k8s.io/v1", "networking.k8s.io/v1beta1", "extensions/v1beta1")
NAME_PREFIX_MAX = 63 - 5  # room for the random suffix in a 63-character name
_TRUE = ("1", "t", "true")
_FALSE = ("0", "f", "false")


@dataclass
class IngressPlan:
    """What to write for one Ingress; the Routes to create have ``generateName`` only."""

    create: list[Route] = field(default_factory=list)
    update: list[Route] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # Rules that got no Route, in OpenShift's words ("... at index 0, path index 1").
    incomplete: list[str] = field(default_factory=list)
    # Notes that are not about a rule (an unreadable annotation).
    warnings: list[str] = field(default_factory=list)
    # The new status.loadBalancer.ingress, or None when it stays as it is.
    load_balancer: list[IngressLoadBalancerIngress] | None = None


def owner_ingress(route: Route) -> str | None:
    """The Ingress controlling ``route`` (its controller owner reference), if any."""
    for ref in route.metadata.owner_references or ():
        if ref.kind == "Ingress" and ref.api_version in OWNER_API_VERSIONS and ref.controller:
            return ref.name
    return None


def default_class(classes: Mapping[str, IngressClass]) -> IngressClass | None:
    """The cluster's default IngressClass: of several, the newest (then by name), as
    Kubernetes' admission picks one."""
    marked = [c for c in classes.values() if c.is_default]
    if not marked:
        return None
    return max(marked, key=lambda c: (c.metadata.creation_timestamp or "", c.name))


def manages(ing: Ingress, classes: Mapping[str, IngressClass]) -> bool:
    """Whether shiftnet's ingress-to-route controller serves ``ing``."""
    name = ing.class_name
    if name is None:
        default = default_class(classes)
        return default is None or default.spec.controller == CONTROLLER
    found = classes.get(name)
    return found is not None and found.spec.controller == CONTROLLER


def reconcile_labels(ing: Ingress) -> tuple[bool, str | None]:
    """``route.openshift.io/reconcile-labels`` as Go's ParseBool reads it (lower-cased);
    an unreadable value is false, with a warning."""
    raw = ing.metadata.annotations.get(RECONCILE_LABELS_ANNOTATION, "")
    value = raw.lower()
    if value in ("", *_FALSE):
        return False, None
    if value in _TRUE:
        return True, None
    return False, f"Invalid value on annotation {RECONCILE_LABELS_ANNOTATION!r}: {raw!r}"


class _NoRoute(Exception):
    """This path gets no Route; the message says why (OpenShift's wording)."""


def _target_port(path: HTTPIngressPath, services: Mapping[str, Service]) -> str | None:
    """The Route's target port name; None targets every port (the matched port has no name)."""
    backend = path.backend.service
    assert backend is not None
    svc = services.get(backend.name)
    if svc is None:
        raise _NoRoute(f'Backend service "{backend.name}" not found')
    for port in svc.spec.ports:
        if backend.port.name:
            if port.name == backend.port.name:
                return port.name
        elif port.port == backend.port.number:
            return port.name or None
    raise _NoRoute(f'No valid target port for backend service "{backend.name}"')


def _tls_secret(ing: Ingress, rule: IngressRule, secrets: Mapping[str, Secret]) -> Secret | None:
    """The Secret of the first ``spec.tls`` entry listing the rule's host; _NoRoute when
    that Secret is missing, not kubernetes.io/tls, or lacks a key."""
    name = next((t.secret_name for t in ing.spec.tls if rule.host in t.hosts), None)
    if name is None:
        return None
    secret = secrets.get(name)
    if (
        secret is None
        or secret.type != TLS
        or TLS_CERT_KEY not in secret.data
        or TLS_PRIVATE_KEY_KEY not in secret.data
    ):
        raise _NoRoute(f'Invalid or missing TLS secret for rule host "{rule.host}"')
    return secret


def _text(secret: Secret, key: str) -> str:
    return (secret.value(key) or b"").decode("utf-8", errors="replace")


def _tls(ing: Ingress, rule: IngressRule, secrets: Mapping[str, Secret]) -> TLSConfig | None:
    secret = _tls_secret(ing, rule, secrets)
    asked = ing.metadata.annotations.get(TERMINATION_ANNOTATION, "")
    empty_entry = any(not t.hosts and not t.secret_name for t in ing.spec.tls)
    if asked not in ("edge", "reencrypt", "passthrough") and secret is None and not empty_entry:
        return None
    termination = asked if asked in ("reencrypt", "passthrough") else "edge"
    tls = TLSConfig(termination=termination, insecure_edge_termination_policy="Redirect")
    if termination != "passthrough" and secret is not None:
        tls.certificate = _text(secret, TLS_CERT_KEY)
        tls.key = _text(secret, TLS_PRIVATE_KEY_KEY)
    if termination == "reencrypt":
        ca = secrets.get(ing.metadata.annotations.get(DESTINATION_CA_ANNOTATION, ""))
        if ca is not None and ca.type in (TLS, "Opaque") and TLS_CERT_KEY in ca.data:
            tls.destination_ca_certificate = _text(ca, TLS_CERT_KEY)
    return tls


def owner_reference(ing: Ingress) -> OwnerReference:
    return OwnerReference(
        api_version=Ingress.API_VERSION,
        kind="Ingress",
        name=ing.name,
        uid=ing.metadata.uid or "",
        controller=True,
    )


def route_for(
    ing: Ingress,
    rule: IngressRule,
    path: HTTPIngressPath,
    services: Mapping[str, Service],
    secrets: Mapping[str, Secret],
) -> Route:
    """The Route one host and path stand for (no name yet); _NoRoute when there is none."""
    ns = ing.namespace or "default"
    port = _target_port(path, services)
    tls = _tls(ing, rule, secrets)
    wildcard = rule.host.startswith("*.")
    host = "wildcard" + rule.host[1:] if wildcard else rule.host
    backend = path.backend.service
    assert backend is not None
    return Route(
        metadata=ObjectMeta(
            generate_name=ing.name[:NAME_PREFIX_MAX] + "-",
            namespace=ns,
            labels=dict(ing.metadata.labels),
            annotations=dict(ing.metadata.annotations),
            owner_references=[owner_reference(ing)],
        ),
        spec=RouteSpec(
            host=host,
            path=path.path,
            to=RouteTargetReference(kind="Service", name=backend.name),
            port=RoutePort(target_port=port) if port is not None else None,
            tls=tls,
            wildcard_policy="Subdomain" if wildcard else "None",
        ),
    )


def _keep_user_fields(ing: Ingress, wanted: Route, existing: Route, labels: bool) -> Route:
    """``wanted`` as an update of ``existing``: its name, status and version, and the
    fields OpenShift leaves to the user."""
    out = existing.model_copy(deep=True)
    out.spec = wanted.spec.model_copy(deep=True)
    out.spec.to.weight = existing.spec.to.weight
    new_tls, old_tls = out.spec.tls, existing.spec.tls
    if new_tls is not None and old_tls is not None:
        new_tls.ca_certificate = old_tls.ca_certificate
        new_tls.insecure_edge_termination_policy = old_tls.insecure_edge_termination_policy
        keep_ca = DESTINATION_CA_ANNOTATION not in ing.metadata.annotations
        if new_tls.termination == "reencrypt" and keep_ca:
            new_tls.destination_ca_certificate = old_tls.destination_ca_certificate
    out.metadata.annotations = dict(wanted.metadata.annotations)
    out.metadata.owner_references = list(wanted.metadata.owner_references or [])
    if labels:
        out.metadata.labels = dict(wanted.metadata.labels)
    return out


def _same(a: Route, b: Route) -> bool:
    return (
        a.spec.to_dict() == b.spec.to_dict()
        and a.metadata.annotations == b.metadata.annotations
        and a.metadata.labels == b.metadata.labels
        and [r.to_dict() for r in a.metadata.owner_references or []]
        == [r.to_dict() for r in b.metadata.owner_references or []]
    )


def _admitted_hostnames(route: Route) -> set[str]:
    out: set[str] = set()
    for entry in route.status.ingress:
        admitted = next((c for c in entry.conditions if c.type == "Admitted"), None)
        if admitted is not None and admitted.status == "True":
            out.add(entry.router_canonical_hostname or "")
    return out


def plan_ingress(
    ing: Ingress,
    services: Mapping[str, Service],
    secrets: Mapping[str, Secret],
    owned: list[Route],
) -> IngressPlan:
    """The writes that make ``owned`` (the Routes ``ing`` controls) what ``ing`` asks for.

    ``services`` and ``secrets`` are those of the Ingress's namespace, by name.
    """
    plan = IngressPlan()
    labels, warning = reconcile_labels(ing)
    if warning:
        plan.warnings.append(warning)
    left = sorted(owned, key=lambda r: r.name)
    kept: list[Route] = []
    deleted: list[Route] = []
    for i, rule in enumerate(ing.spec.rules):
        if rule.http is None:
            plan.incomplete.append(f"Missing http field in rule at index {i}")
            continue
        if not rule.host:
            plan.incomplete.append(f"Missing host field in rule at index {i}")
            continue
        host = "wildcard" + rule.host[1:] if rule.host.startswith("*.") else rule.host
        for j, path in enumerate(rule.http.paths):
            where = f"in rule at index {i}, path index {j}"
            backend = path.backend.service
            if backend is None:
                plan.incomplete.append(f"Missing backend service field {where}")
                continue
            if not backend.name:
                plan.incomplete.append(f"Missing backend service name {where}")
                continue
            if path.path_type == "Exact":
                plan.incomplete.append(f"Unsupported exact path type {where}")
                continue
            existing = next(
                (r for r in left if r.spec.host == host and r.spec.path == path.path), None
            )
            if existing is not None:
                left.remove(existing)
            try:
                wanted = route_for(ing, rule, path, services, secrets)
            except _NoRoute as exc:
                plan.incomplete.append(f"{exc} at index {i}, path index {j}")
                if existing is not None:
                    deleted.append(existing)
                continue
            if existing is None:
                plan.create.append(wanted)
                continue
            updated = _keep_user_fields(ing, wanted, existing, labels)
            if _same(updated, existing):
                kept.append(existing)
            else:
                plan.update.append(updated)
    deleted += left
    plan.delete = sorted(r.name for r in deleted)
    plan.unchanged = sorted(r.name for r in kept)
    plan.load_balancer = _load_balancer(ing, deleted, kept)
    return plan


def _load_balancer(
    ing: Ingress, deleted: list[Route], kept: list[Route]
) -> list[IngressLoadBalancerIngress] | None:
    before = {e.hostname or "" for e in ing.status.load_balancer.ingress}
    after = set(before)
    for route in deleted:
        after -= _admitted_hostnames(route)
    for route in kept:
        after |= _admitted_hostnames(route)
    if after == before:
        return None
    return [IngressLoadBalancerIngress(hostname=h or None) for h in sorted(after)]
