"""OpenAPI v2 and v3 documents generated from the resource models, in Kubernetes' shape.

kubectl reads them: ``kubectl explain route.spec.tls`` walks the v3 document
of the route group (``components.schemas`` found by
``x-kubernetes-group-version-kind``, fields by ``properties``, text from
``description``); ``kubectl apply`` takes the list merge keys of the core
kinds from the ``x-kubernetes-patch-*`` extensions, and skips its own schema
check when the PATCH operation lists the ``fieldValidation`` parameter, since
the server then checks unknown fields itself. Definitions are named as
Kubernetes and OpenShift name them (``io.k8s.api.core.v1.Service``,
``com.github.openshift.api.route.v1.Route``). Pure and deterministic: the
same models give the same documents, keys sorted.
"""

from __future__ import annotations

import hashlib
import json
import types
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from shiftnet.api.base import ManagedFieldsEntry, ObjectMeta, Resource
from shiftnet.api.registry import KINDS
from shiftnet.apiserver.merge_keys import EMPTY, STRATEGIC, MergeList, Struct, strategy_for
from shiftnet.errors import NotFound

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
PATCH = f"{META}.Patch"
STATUS = f"{META}.Status"
DELETE_OPTIONS = f"{META}.DeleteOptions"
LIST_META = f"{META}.ListMeta"

# Where each model module's types live in Kubernetes' and OpenShift's naming.
_PACKAGES = {
    "shiftnet.api.core": "io.k8s.api.core.v1",
    "shiftnet.api.base": "io.k8s.api.core.v1",
    "shiftnet.api.route": "com.github.openshift.api.route.v1",
    "shiftnet.api.network": "com.github.openshift.api.network.v1",
}

_COMMON = {
    "apiVersion": "The versioned schema of this object, e.g. v1 or route.openshift.io/v1.",
    "kind": "The kind of object, in CamelCase, e.g. Service or Route.",
    "metadata": "Standard object metadata: name, namespace, labels, annotations.",
    "spec": "The desired state of the object.",
    "status": "The state the system last saw; written by its controllers, read-only for users.",
}

_KIND_TEXT = {
    "Namespace": "A scope for names: namespaced objects live in exactly one namespace.",
    "Pod": "One or more containers that run together on a node and share an address.",
    "Service": "A stable virtual address and name for the pods its selector picks.",
    "Endpoints": "The addresses and ports of the pods behind a service.",
    "Node": "A machine that runs pods.",
    "Route": "Exposes a service at a host name, through the cluster's routers.",
    "ClusterNetwork": "The cluster's pod networks, service network and node subnet size.",
    "HostSubnet": "The pod subnet given to one node, and the node's underlay address.",
}


def _group_version(kind: type[Resource]) -> tuple[str, str]:
    group, _, version = kind.API_VERSION.rpartition("/")
    return group, version


def definition_name(model: type[BaseModel]) -> str:
    """``io.k8s.api.core.v1.Service``, ``com.github.openshift.api.route.v1.TLSConfig``."""
    if model is ObjectMeta or model is ManagedFieldsEntry:
        return f"{META}.{model.__name__}"
    return f"{_PACKAGES.get(model.__module__, 'io.shiftnet.api.v1')}.{model.__name__}"


def _list_name(kind: type[Resource]) -> str:
    return f"{definition_name(kind)}List"


def _gvk(kind: type[Resource], suffix: str = "") -> dict[str, str]:
    group, version = _group_version(kind)
    return {"group": group, "kind": kind.KIND + suffix, "version": version}


def _rules_by_model() -> dict[type[BaseModel], Struct]:
    """Which merge rules apply inside each model, found by walking the kinds along their rules."""
    out: dict[type[BaseModel], Struct] = {}

    def walk(model: type[BaseModel], rules: Struct) -> None:
        out.setdefault(model, rules)
        for name, info in model.model_fields.items():
            alias = info.alias or name
            child = _model_in(info.annotation)
            if child is None:
                continue
            if alias in rules.fields:
                walk(child, rules.fields[alias])
            elif alias in rules.lists:
                walk(child, rules.lists[alias].item)

    for kind, rules in STRATEGIC.items():
        walk(kind, rules)
    return out


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, directly, in a list, or optional."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


_RULES = _rules_by_model()


@dataclass
class _Schemas:
    """Collects the definitions one document needs, v2 or v3 style."""

    v3: bool
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ref(self, name: str) -> dict[str, Any]:
        prefix = "#/components/schemas/" if self.v3 else "#/definitions/"
        return {"$ref": prefix + name}

    def described(self, schema: dict[str, Any], description: str) -> dict[str, Any]:
        """A schema with a description; a v3 reference goes inside ``allOf``, as Kubernetes'."""
        if not description:
            return schema
        if "$ref" in schema:
            if self.v3:
                return {"allOf": [schema], "description": description}
            return {**schema, "description": description}
        return {**schema, "description": description}

    def type_schema(self, annotation: Any, name: str) -> dict[str, Any]:
        origin = get_origin(annotation)
        args = get_args(annotation)
        if origin in (Union, types.UnionType):
            present = [a for a in args if a is not type(None)]
            if set(present) == {int, str}:
                return self.ref(self.int_or_string())
            if len(present) == 1:
                return self.type_schema(present[0], name)
            return {}
        if origin is list:
            return {"type": "array", "items": self.type_schema(args[0], name)}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.type_schema(args[1], name)}
        if annotation is str:
            if name.endswith(("Timestamp", "Time")):
                return {"type": "string", "format": "date-time"}
            return {"type": "string"}
        if annotation is bool:
            return {"type": "boolean"}
        if annotation is int:
            return {"type": "integer", "format": "int64" if name == "generation" else "int32"}
        if annotation is float:
            return {"type": "number", "format": "double"}
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.ref(self.model(annotation))
        return {}

    def property_schema(
        self, name: str, info: FieldInfo, rules: MergeList | None
    ) -> dict[str, Any]:
        schema = self.type_schema(info.annotation, name)
        extra = info.json_schema_extra
        enum = extra.get("enum") if isinstance(extra, dict) else None
        if isinstance(enum, list):
            schema = {**schema, "enum": list(enum)}
        if rules is not None:
            if rules.key is not None:
                schema["x-kubernetes-patch-merge-key"] = rules.key
            schema["x-kubernetes-patch-strategy"] = rules.strategy
        return self.described(schema, info.description or _COMMON.get(name, ""))

    def model(self, model: type[BaseModel]) -> str:
        name = definition_name(model)
        if name in self.definitions:
            return name
        self.definitions[name] = {}  # placeholder: a model may refer to itself
        rules = _RULES.get(model, EMPTY)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field_name, info in model.model_fields.items():
            alias = info.alias or field_name
            properties[alias] = self.property_schema(alias, info, rules.lists.get(alias))
            if info.is_required():
                required.append(alias)
        schema: dict[str, Any] = {"type": "object", "properties": dict(sorted(properties.items()))}
        text = _KIND_TEXT.get(model.__name__) if issubclass(model, Resource) else None
        text = text or model.__dict__.get("__doc__") or ""
        if text:
            schema["description"] = " ".join(text.split())
        if required:
            schema["required"] = sorted(required)
        if issubclass(model, Resource):
            schema["x-kubernetes-group-version-kind"] = [_gvk(model)]
        self.definitions[name] = schema
        return name

    def kind_list(self, kind: type[Resource]) -> str:
        name = _list_name(kind)
        self.definitions[name] = {
            "type": "object",
            "description": f"A list of {kind.KIND} objects.",
            "properties": {
                "apiVersion": {"type": "string", "description": _COMMON["apiVersion"]},
                "items": {"type": "array", "items": self.ref(self.model(kind))},
                "kind": {"type": "string", "description": _COMMON["kind"]},
                "metadata": self.described(self.ref(self.list_meta()), "Standard list metadata."),
            },
            "required": ["items"],
            "x-kubernetes-group-version-kind": [_gvk(kind, "List")],
        }
        return name

    def int_or_string(self) -> str:
        self.definitions[INT_OR_STRING] = {
            "type": "string",
            "format": "int-or-string",
            "description": "A value that is either a whole number or a string, e.g. a port "
            "given by number or by name.",
        }
        return INT_OR_STRING

    def list_meta(self) -> str:
        self.definitions[LIST_META] = {
            "type": "object",
            "description": "Metadata of a list: where to continue and the version listed.",
            "properties": {
                "continue": {"type": "string", "description": "Token for the next page."},
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": {"type": "string", "description": "The version listed."},
            },
        }
        return LIST_META

    def meta_types(self) -> None:
        """The request and answer types every resource path refers to."""
        self.definitions[PATCH] = {
            "type": "object",
            "description": "A patch body: a JSON patch, a JSON merge patch or a strategic "
            "merge patch, as the Content-Type says.",
        }
        self.definitions[STATUS] = {
            "type": "object",
            "description": "The answer to a request that returns no object, or an error.",
            "properties": {
                name: {"type": kind}
                for name, kind in (
                    ("apiVersion", "string"),
                    ("code", "integer"),
                    ("details", "object"),
                    ("kind", "string"),
                    ("message", "string"),
                    ("metadata", "object"),
                    ("reason", "string"),
                    ("status", "string"),
                )
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
        }
        self.definitions[DELETE_OPTIONS] = {
            "type": "object",
            "description": "Options of a delete request.",
            "properties": {
                "apiVersion": {"type": "string"},
                "dryRun": {"type": "array", "items": {"type": "string"}},
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "kind": {"type": "string"},
                "propagationPolicy": {"type": "string"},
            },
        }
        self.list_meta()

    def sorted(self) -> dict[str, dict[str, Any]]:
        return dict(sorted(self.definitions.items()))


# ---------------------------------------------------------------- paths


_QUERY = {
    "dryRun": "When All, the request is checked but nothing is stored.",
    "fieldManager": "A name for the actor making the change.",
    "fieldValidation": "What the server does with unknown or duplicate fields: Ignore, Warn "
    "or Strict (refuse the request).",
    "pretty": "Indent the answer.",
    "labelSelector": "Only objects whose labels match this selector.",
    "fieldSelector": "Only objects whose fields match this selector.",
    "limit": "At most this many objects; the list metadata then carries a continue token.",
    "continue": "The token of the previous page, to get the next one.",
    "resourceVersion": "The version to list or watch from.",
    "resourceVersionMatch": "How resourceVersion applies to a list.",
    "timeoutSeconds": "End a list or watch after this many seconds.",
    "watch": "Stream changes as watch events instead of answering with a list.",
    "allowWatchBookmarks": "Let the watch send BOOKMARK events carrying the current version.",
    "gracePeriodSeconds": "Seconds before the object is deleted.",
    "propagationPolicy": "Whether and how dependents are deleted.",
}
_INTEGER_QUERY = {"limit", "timeoutSeconds", "gracePeriodSeconds"}
_BOOLEAN_QUERY = {"watch", "allowWatchBookmarks"}


def _parameter(name: str, where: str, v3: bool) -> dict[str, Any]:
    kind = "string"
    if name in _INTEGER_QUERY:
        kind = "integer"
    elif name in _BOOLEAN_QUERY:
        kind = "boolean"
    text = _QUERY.get(name, f"The {name} of the object." if where == "path" else "")
    out: dict[str, Any] = {"name": name, "in": where, "description": text}
    if where == "path":
        out["required"] = True
    if v3:
        out["schema"] = {"type": kind, "uniqueItems": True}
    else:
        out["type"] = kind
        out["uniqueItems"] = True
    return out


def _operation_id(verb: str, kind: type[Resource], scope: str, suffix: str = "") -> str:
    group, version = _group_version(kind)
    words = group.replace(".", " ").replace("-", " ").split() or ["core"]
    group_part = "".join(w[:1].upper() + w[1:] for w in words)
    return f"{verb}{group_part}{version[:1].upper()}{version[1:]}{scope}{kind.KIND}{suffix}"


def _tag(kind: type[Resource]) -> str:
    group, version = _group_version(kind)
    if not group:
        return f"core_{version}"
    words = group.replace("-", ".").split(".")
    return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:]) + f"_{version}"


@dataclass
class _Paths:
    schemas: _Schemas
    kind: type[Resource]

    @property
    def v3(self) -> bool:
        return self.schemas.v3

    def _answers(self, name: str, codes: tuple[str, ...]) -> dict[str, Any]:
        texts = {"200": "OK", "201": "Created", "202": "Accepted"}
        out: dict[str, Any] = {}
        for code in codes:
            if self.v3:
                content = {"application/json": {"schema": self.schemas.ref(name)}}
                out[code] = {"description": texts[code], "content": content}
            else:
                out[code] = {"description": texts[code], "schema": self.schemas.ref(name)}
        out["401"] = {"description": "Unauthorized"}
        return out

    def _body(self, op: dict[str, Any], name: str, types: tuple[str, ...]) -> None:
        if self.v3:
            op["requestBody"] = {
                "content": {t: {"schema": self.schemas.ref(name)} for t in types},
                "required": True,
            }
        else:
            op["consumes"] = list(types)
            body = {"name": "body", "in": "body", "required": True}
            op["parameters"] = [{**body, "schema": self.schemas.ref(name)}, *op["parameters"]]

    def operation(
        self,
        action: str,
        verb: str,
        scope: str,
        description: str,
        query: tuple[str, ...],
        answer: str,
        codes: tuple[str, ...] = ("200",),
        suffix: str = "",
        gvk_suffix: str = "",
    ) -> dict[str, Any]:
        op: dict[str, Any] = {
            "description": description,
            "operationId": _operation_id(verb, self.kind, scope, suffix),
            "parameters": [_parameter(q, "query", self.v3) for q in query],
            "responses": self._answers(answer, codes),
            "tags": [_tag(self.kind)],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": _gvk(self.kind, gvk_suffix),
        }
        if not self.v3:
            op["produces"] = ["application/json"]
            op["schemes"] = ["https"]
        return op

    def item(self, ops: dict[str, dict[str, Any]], params: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = dict(sorted(ops.items()))
        out["parameters"] = [
            _parameter(p, "query" if p == "pretty" else "path", self.v3) for p in params
        ]
        return out

    def build(self) -> dict[str, dict[str, Any]]:
        kind, s = self.kind, self.schemas
        group, version = _group_version(kind)
        root = f"/apis/{group}/{version}" if group else f"/api/{version}"
        scope = "Namespaced" if kind.NAMESPACED else ""
        base = (
            f"{root}/namespaces/{{namespace}}/{kind.RESOURCE}"
            if kind.NAMESPACED
            else f"{root}/{kind.RESOURCE}"
        )
        owner = ("namespace", "pretty") if kind.NAMESPACED else ("pretty",)
        name = s.model(kind)
        listing = s.kind_list(kind)
        s.meta_types()
        writes = ("dryRun", "fieldManager", "fieldValidation")
        list_query = (
            "allowWatchBookmarks",
            "continue",
            "fieldSelector",
            "labelSelector",
            "limit",
            "resourceVersion",
            "resourceVersionMatch",
            "timeoutSeconds",
            "watch",
        )
        patch_types = ["application/json-patch+json", "application/merge-patch+json"]
        if strategy_for(kind) is not None:
            patch_types.append("application/strategic-merge-patch+json")
        k = kind.KIND
        create = self.operation(
            "post", "create", scope, f"create a {k}", writes, name, ("200", "201", "202")
        )
        self._body(create, name, ("application/json",))
        collection = {
            "get": self.operation(
                "list",
                "list",
                scope,
                f"list or watch {k} objects",
                list_query,
                listing,
                gvk_suffix="",
            ),
            "post": create,
            "delete": self.operation(
                "deletecollection",
                "delete",
                scope,
                f"delete a collection of {k} objects",
                ("dryRun", "gracePeriodSeconds", "propagationPolicy", *list_query[1:-1]),
                STATUS,
                suffix="",
                gvk_suffix="",
            ),
        }
        collection["delete"]["operationId"] = _operation_id("deleteCollection", kind, scope)
        paths = {base: self.item(collection, owner)}

        def one(sub: str, label: str) -> dict[str, Any]:
            read = self.operation(
                "get", "read", scope, f"read {label} of the {k}", (), name, suffix=sub
            )
            replace = self.operation(
                "put",
                "replace",
                scope,
                f"replace {label} of the {k}",
                writes,
                name,
                ("200", "201"),
                suffix=sub,
            )
            self._body(replace, name, ("application/json",))
            patch = self.operation(
                "patch",
                "patch",
                scope,
                f"partially update {label} of the {k}",
                (*writes, "force"),
                name,
                ("200", "201"),
                suffix=sub,
            )
            self._body(patch, PATCH, tuple(patch_types))
            return {"get": read, "put": replace, "patch": patch}

        item_ops = one("", "the object")
        item_ops["delete"] = self.operation(
            "delete",
            "delete",
            scope,
            f"delete a {k}",
            ("dryRun", "gracePeriodSeconds", "propagationPolicy"),
            STATUS,
            ("200", "202"),
        )
        paths[f"{base}/{{name}}"] = self.item(item_ops, ("name", *owner))
        if "status" in kind.model_fields:
            paths[f"{base}/{{name}}/status"] = self.item(
                one("Status", "the status"), ("name", *owner)
            )
        if kind.NAMESPACED:
            everywhere = self.operation(
                "list",
                "list",
                "",
                f"list or watch {k} objects in every namespace",
                list_query,
                listing,
                suffix="ForAllNamespaces",
            )
            paths[f"{root}/{kind.RESOURCE}"] = self.item({"get": everywhere}, ("pretty",))
        if kind.KIND == "Pod":
            log = self.operation(
                "get",
                "read",
                scope,
                "read the log of a container of the Pod",
                ("container", "follow", "tailLines", "timestamps"),
                name,
                suffix="Log",
            )
            answer = {"type": "string"}
            if self.v3:
                log["responses"]["200"]["content"] = {"text/plain": {"schema": answer}}
            else:
                log["responses"]["200"]["schema"] = answer
                log["produces"] = ["text/plain"]
            paths[f"{base}/{{name}}/log"] = self.item({"get": log}, ("name", *owner))
        return paths


# ---------------------------------------------------------------- documents


def _info(version: str) -> dict[str, str]:
    return {"title": "shiftnet", "version": version}


_SECURITY = {
    "BearerToken": {
        "type": "apiKey",
        "name": "authorization",
        "in": "header",
        "description": "Bearer token authentication",
    }
}


def openapi_v2(version: str = "unversioned") -> dict[str, Any]:
    """The swagger 2.0 document served at ``/openapi/v2``: every kind, its paths, definitions."""
    schemas = _Schemas(v3=False)
    paths: dict[str, Any] = {}
    for kind in KINDS:
        paths.update(_Paths(schemas, kind).build())
    return {
        "swagger": "2.0",
        "info": _info(version),
        "paths": dict(sorted(paths.items())),
        "definitions": schemas.sorted(),
        "securityDefinitions": _SECURITY,
        "security": [{"BearerToken": []}],
    }


def group_versions() -> list[str]:
    """The group-versions shiftnet serves: ``v1``, ``route.openshift.io/v1``, ..."""
    return sorted({k.API_VERSION for k in KINDS})


def _index_path(group_version: str) -> str:
    return f"apis/{group_version}" if "/" in group_version else f"api/{group_version}"


def openapi_v3(group_version: str, version: str = "unversioned") -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group-version (``v1``, ``route.openshift.io/v1``).

    Also accepts the index's path form (``api/v1``, ``apis/route.openshift.io/v1``).
    """
    wanted = group_version.removeprefix("apis/").removeprefix("api/")
    kinds = [k for k in KINDS if wanted == k.API_VERSION]
    if not kinds:
        raise NotFound("OpenAPI group version", None, group_version)
    schemas = _Schemas(v3=True)
    paths: dict[str, Any] = {}
    for kind in kinds:
        paths.update(_Paths(schemas, kind).build())
    return {
        "openapi": "3.0.0",
        "info": _info(version),
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": schemas.sorted(), "securitySchemes": _SECURITY},
        "security": [{"BearerToken": []}],
    }


def document_bytes(document: dict[str, Any]) -> bytes:
    """The canonical JSON of a document: what the server sends and what its hash covers."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def openapi_v3_index(version: str = "unversioned") -> dict[str, Any]:
    """``/openapi/v3``: where each group-version's document is, with a hash of its content.

    Clients cache documents by URL, so the hash changes whenever the document does.
    """
    paths = {}
    for gv in group_versions():
        digest = hashlib.sha512(document_bytes(openapi_v3(gv, version))).hexdigest().upper()
        path = _index_path(gv)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": dict(sorted(paths.items()))}
