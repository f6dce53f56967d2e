"""``kubectl auth can-i`` and ``kubectl auth whoami``: the self reviews, answered.

Why: every valid token may do everything here (docs/api.md), so the answer to
"may I?" is always yes, but kubectl asks it through
``SelfSubjectAccessReview`` (``can-i``), ``SelfSubjectRulesReview``
(``can-i --list``) and ``SelfSubjectReview`` (``whoami``), and a 404 reads as
"the server could not find the requested resource". Nothing is stored: each
review is answered from its request and the caller's token, as upstream's.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from shiftnet.api.fielderrors import FieldError, invalid, required
from shiftnet.apiserver.bodies import read_object
from shiftnet.apiserver.status import StatusError, bad_request, invalid_object
from shiftnet.apiserver.tokens import TokenUser

AUTHORIZATION = "authorization.k8s.io/v1"
AUTHENTICATION = "authentication.k8s.io/v1"
ACCESS_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
RULES_PATH = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
WHOAMI_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
USER_KEY = "shiftnet.user"  # set by the authentication middleware
ALLOWED = "every authenticated token may do everything on this server (no RBAC)"
_ONE_OF = "exactly one of nonResourceAttributes or resourceAttributes must be specified"


def _invalid(kind: str, error: FieldError) -> StatusError:
    """422 as upstream's validation of a review's spec (reviews have no name)."""
    details: dict[str, Any] = {"name": "", "group": "authorization.k8s.io", "kind": kind}
    return invalid_object(f"{kind}.authorization.k8s.io", details, [error])


def _reviewed(doc: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    if doc.get("kind") not in (None, kind) or doc.get("apiVersion") not in (None, api_version):
        raise bad_request(f"the request body must be a {kind} of {api_version}")
    spec = doc.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise bad_request(f"spec of the {kind} must be an object")
    return spec or {}


def access_review(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (a SelfSubjectAccessReview) answered: allowed, when its spec is well formed."""
    kind = "SelfSubjectAccessReview"
    spec = _reviewed(doc, AUTHORIZATION, kind)
    resource, other = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is None and other is None:
        raise _invalid(kind, required("spec.resourceAttributes", _ONE_OF))
    if resource is not None and other is not None:
        why = "cannot be specified in combination with resourceAttributes"
        raise _invalid(kind, invalid("spec.resourceAttributes", "", why))
    return _answer(AUTHORIZATION, kind, spec, {"allowed": True, "reason": ALLOWED})


def rules_review(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (a SelfSubjectRulesReview) answered: every verb on everything."""
    spec = _reviewed(doc, AUTHORIZATION, "SelfSubjectRulesReview")
    status = {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }
    return _answer(AUTHORIZATION, "SelfSubjectRulesReview", spec, status)


def user_review(user: TokenUser) -> dict[str, Any]:
    """A SelfSubjectReview of the caller: who its token says it is."""
    info: dict[str, Any] = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    info["groups"] = [*user.groups, "system:authenticated"]
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": AUTHENTICATION,
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": info},
    }


def _answer(
    api_version: str, kind: str, spec: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def install(app: web.Application, limit: int) -> None:
    """The three review paths (POST only; anything else is 405 as upstream's create-only
    resources)."""

    async def access(request: web.Request) -> web.Response:
        body = await read_object(request, limit)
        return web.json_response(access_review(body.doc), status=201)

    async def rules(request: web.Request) -> web.Response:
        body = await read_object(request, limit)
        return web.json_response(rules_review(body.doc), status=201)

    async def whoami(request: web.Request) -> web.Response:
        await read_object(request, limit)
        return web.json_response(user_review(request[USER_KEY]), status=201)

    app.router.add_post(ACCESS_PATH, access)
    app.router.add_post(RULES_PATH, rules)
    app.router.add_post(WHOAMI_PATH, whoami)
