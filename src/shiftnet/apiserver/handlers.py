"""HTTP in and out of the resource tree: URL and method to a verb, result to JSON or Table.

Everything a verb needs to know comes from the URL (:mod:`paths`), the query
and the body; every failure leaves as a ``Status`` (see
:func:`status_middleware`), never as a traceback.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from shiftnet.api.names import parse_integer
from shiftnet.api.selectors import parse_selector
from shiftnet.apiserver import discovery, openapi, tables
from shiftnet.apiserver.apply_shapes import shape_for
from shiftnet.apiserver.bodies import (
    APPLY_PATCH,
    YAML_TYPES,
    content_type,
    decode,
    read_body,
    read_object,
)
from shiftnet.apiserver.config import APIServerConfig
from shiftnet.apiserver.discovery_responses import discovery_response
from shiftnet.apiserver.fanout import WatchFanout
from shiftnet.apiserver.fieldselectors import parse_field_selector
from shiftnet.apiserver.fieldvalidation import FieldCheck, parse_directive, warning_header
from shiftnet.apiserver.managed_fields import Ownership
from shiftnet.apiserver.openapi_accept import JSON, PROTOBUF, negotiate_v2
from shiftnet.apiserver.openapi_protobuf import MEDIA_TYPE, encode_document
from shiftnet.apiserver.ownership import field_manager, parse_force, update_ownership
from shiftnet.apiserver.paging import parse_limit
from shiftnet.apiserver.patching import patch_function
from shiftnet.apiserver.paths import Target, parse_path
from shiftnet.apiserver.podlogs import serve_log
from shiftnet.apiserver.protobuf import accepts_only_protobuf
from shiftnet.apiserver.resources import ResourceInfo
from shiftnet.apiserver.server_side_apply import ApplyRequest, server_side_apply
from shiftnet.apiserver.status import (
    StatusError,
    bad_request,
    failure,
    method_not_allowed,
    path_not_found,
    success,
)
from shiftnet.apiserver.verbs import Verbs
from shiftnet.apiserver.watch import WatchRequest, parse_start, parse_timeout, serve_watch
from shiftnet.errors import InvalidInput, NotFound, ShiftnetError
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_response(
    body: dict[str, Any], status: int = 200, warnings: list[str] | None = None
) -> web.Response:
    resp = web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
    )
    for text in warnings or ():
        resp.headers.add("Warning", warning_header(text))
    return resp


@web.middleware
async def status_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error as a ``Status``: ours, aiohttp's (404/405/413) and unexpected ones."""
    try:
        return await handler(request)
    except StatusError as err:
        if err.code >= 500:
            log.warning(
                "request failed method=%s path=%s reason=%s",
                request.method,
                request.path,
                err.reason,
            )
        return json_response(err.body(), err.code)
    except web.HTTPException as err:
        if err.status < 400:
            raise
        reason = {404: "NotFound", 405: "MethodNotAllowed", 413: "RequestEntityTooLarge"}.get(
            err.status, "BadRequest"
        )
        return json_response(failure(err.status, reason, err.reason), err.status)
    except InvalidInput as err:
        return json_response(failure(400, "BadRequest", str(err)), 400)


@functools.cache
def _document_bytes(which: str) -> bytes:
    """The OpenAPI documents never change while the server runs: built once each."""
    if which == "v2":
        return openapi.document_bytes(openapi.openapi_v2())
    if which == "v3":
        return openapi.document_bytes(openapi.openapi_v3_index())
    return openapi.document_bytes(openapi.openapi_v3(which))


@functools.cache
def _v2_protobuf() -> bytes:
    return encode_document(openapi.openapi_v2())


def _document(which: str) -> web.Response:
    return web.Response(body=_document_bytes(which), content_type="application/json")


def wants_table(request: web.Request) -> bool:
    for part in request.headers.get("Accept", "").split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            return True
    return False


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


def _dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for v in values:
        if v != "All":
            raise bad_request(f'dryRun: Unsupported value: "{v}": supported values: "All"')
    return bool(values)


def _field_check(request: web.Request, duplicates: tuple[str, ...] = ()) -> FieldCheck:
    return FieldCheck(parse_directive(request.query.getall("fieldValidation", [])), duplicates)


def _update_fields(request: web.Request, info: ResourceInfo, options: str) -> Ownership:
    """The managedFields bookkeeping of an update or a (non-apply) patch."""
    agent = request.headers.get("User-Agent", "")
    manager = field_manager(options, request.query.get("fieldManager"), agent, apply=False)
    return update_ownership(info, manager, shape_for(info.model))


class ResourceAPI:
    """The handlers of ``/api``, ``/apis`` and their resource trees."""

    def __init__(self, store: Store, config: APIServerConfig, server_address: str) -> None:
        self.store = store
        self.config = config
        self.verbs = Verbs(store)
        self.watches = WatchFanout(store)
        self.server_address = server_address

    # ------------------------------------------------------------ discovery

    async def core(self, request: web.Request) -> web.Response:
        return discovery_response(request, "/api", discovery.core_versions(self.server_address))

    async def groups(self, request: web.Request) -> web.Response:
        return discovery_response(request, "/apis", discovery.group_list())

    async def group(self, request: web.Request) -> web.Response:
        found = discovery.api_group(request.match_info["group"])
        if found is None:
            raise path_not_found(request.path)
        return json_response(found)

    async def version(self, request: web.Request) -> web.Response:
        return json_response(discovery.version_info())

    async def openapi_v2(self, request: web.Request) -> web.Response:
        answer = negotiate_v2(request.headers.get("Accept", ""))
        if answer is None:
            raise StatusError(406, "NotAcceptable", f"only {JSON}, {MEDIA_TYPE} are served")
        if answer == PROTOBUF:
            response = web.Response(body=_v2_protobuf(), headers={"Content-Type": PROTOBUF})
        else:
            response = _document("v2")
        response.headers["Vary"] = "Accept"
        return response

    async def openapi_v3_index(self, request: web.Request) -> web.Response:
        return _document("v3")

    async def openapi_v3(self, request: web.Request) -> web.Response:
        try:
            return _document(request.match_info["path"])
        except NotFound:
            raise path_not_found(request.path) from None

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    # ------------------------------------------------------------ resources

    async def resource(self, request: web.Request) -> web.StreamResponse:
        if accepts_only_protobuf(request.headers.get("Accept", "")):
            only = "only the following media types are accepted: application/json"
            raise StatusError(406, "NotAcceptable", only)
        target = parse_path(request.path)
        if target is None or target.unknown is not None:
            raise path_not_found(request.path)
        if target.resource is None:
            if request.method != "GET":
                raise method_not_allowed()
            found = discovery.resource_list(target.group, target.version)
            if found is None:
                raise path_not_found(request.path)
            return json_response(found)
        info = target.resource
        if info.namespaced and target.namespace is None and target.name is not None:
            raise path_not_found(request.path)
        if target.subresource is not None:
            return await self._subresource(request, target, info)
        if target.name is None:
            return await self._collection(request, target, info)
        return await self._item(request, target, info, target.name)

    async def _collection(
        self, request: web.Request, target: Target, info: ResourceInfo
    ) -> web.StreamResponse:
        q = request.query
        if request.method == "GET":
            if _flag(request, "watch"):
                return await self._watch(request, target, info)
            result = await self.verbs.list(
                info,
                target.namespace,
                label_selector=q.get("labelSelector"),
                field_selector=q.get("fieldSelector"),
                limit=parse_limit(q.get("limit")),
                continue_token=q.get("continue"),
                shape=not wants_table(request),  # a Table shapes only what it shows
            )
            return self._answer(request, info, result, listed=True)
        if request.method == "POST":
            if info.namespaced and target.namespace is None:
                raise method_not_allowed()
            check = _field_check(request)
            if "fieldManager" in q:  # checked as upstream; creates record no managedFields
                field_manager("CreateOptions", q["fieldManager"], "", apply=False)
            body = await read_object(request, self.config.max_body_bytes)
            check.duplicates = body.duplicates
            created = await self.verbs.create(
                info, target.namespace, body.doc, _dry_run(request), check
            )
            return json_response(created, 201, check.warnings)
        if request.method == "DELETE":
            await self._drain_body(request)
            gone = await self.verbs.delete_collection(
                info,
                target.namespace,
                label_selector=q.get("labelSelector"),
                field_selector=q.get("fieldSelector"),
                dry_run=_dry_run(request),
            )
            return json_response(gone)
        raise method_not_allowed()

    async def _item(
        self, request: web.Request, target: Target, info: ResourceInfo, name: str
    ) -> web.StreamResponse:
        ns = target.namespace
        if request.method == "GET":
            if _flag(request, "watch"):
                return await self._watch(request, target, info)
            return self._answer(request, info, await self.verbs.get(info, ns, name))
        if request.method == "PUT":
            check = _field_check(request)
            body = await read_object(request, self.config.max_body_bytes)
            check.duplicates = body.duplicates
            fields = _update_fields(request, info, "UpdateOptions")
            updated = await self.verbs.update(
                info, ns, name, body.doc, _dry_run(request), check=check, fields=fields
            )
            return json_response(updated, warnings=check.warnings)
        if request.method == "PATCH":
            return await self._patch(request, info, ns, name, None)
        if request.method == "DELETE":
            options = await self._drain_body(request)
            pre = options.get("preconditions") or {}
            dry = _dry_run(request) or "All" in (options.get("dryRun") or [])
            gone = await self.verbs.delete(
                info,
                ns,
                name,
                resource_version=pre.get("resourceVersion"),
                uid=pre.get("uid"),
                dry_run=dry,
                grace_period=_grace_period(request, options),
            )
            if info.returns_deleted:
                return json_response(gone)
            uid = (gone.get("metadata") or {}).get("uid")
            return json_response(success(info, name, uid))
        raise method_not_allowed()

    async def _subresource(
        self, request: web.Request, target: Target, info: ResourceInfo
    ) -> web.StreamResponse:
        sub, name, ns = target.subresource, target.name, target.namespace
        assert sub is not None and name is not None
        if sub not in info.subresources:
            raise path_not_found(request.path)
        if sub == "log":
            if request.method != "GET":
                raise method_not_allowed()
            pod = await self.verbs.get_raw(info, ns, name)
            uid = (pod.get("metadata") or {}).get("uid")

            async def still_there() -> bool:
                try:
                    current = await self.store.get(info.plural, ns, name)
                except ShiftnetError:  # gone or unreachable: the follow ends
                    return False
                return (current.get("metadata") or {}).get("uid") == uid

            return await serve_log(request, Path(self.config.state_dir), pod, still_there)
        if request.method == "GET":
            return json_response(await self.verbs.get(info, ns, name))
        if request.method == "PUT":
            check = _field_check(request)
            body = await read_object(request, self.config.max_body_bytes)
            check.duplicates = body.duplicates
            updated = await self.verbs.update(
                info, ns, name, body.doc, _dry_run(request), sub, check
            )
            return json_response(updated, warnings=check.warnings)
        if request.method == "PATCH":
            return await self._patch(request, info, ns, name, sub)
        raise method_not_allowed()

    async def _patch(
        self,
        request: web.Request,
        info: ResourceInfo,
        ns: str | None,
        name: str,
        sub: str | None,
    ) -> web.Response:
        kind = content_type(request)
        if kind == APPLY_PATCH:
            return await self._apply(request, info, ns, name, sub)
        parse_force(request.query.get("force"), apply=False)
        check = _field_check(request)
        raw = await read_body(request, self.config.max_body_bytes)
        body = decode(raw, kind)
        check.duplicates = body.duplicates
        apply = patch_function(kind, body.doc, info)
        fields = _update_fields(request, info, "PatchOptions") if sub is None else None
        patched = await self.verbs.patch(
            info, ns, name, apply, _dry_run(request), sub, check, fields
        )
        return json_response(patched, warnings=check.warnings)

    async def _apply(
        self, request: web.Request, info: ResourceInfo, ns: str | None, name: str, sub: str | None
    ) -> web.Response:
        """Server-side apply (:mod:`shiftnet.apiserver.server_side_apply`)."""
        if sub is not None:
            raise StatusError(
                415,
                "UnsupportedMediaType",
                f"server-side apply to the {sub} subresource is not served: apply to the "
                f"object, or patch its {sub}",
            )
        agent = request.headers.get("User-Agent", "")
        manager = field_manager(
            "PatchOptions", request.query.get("fieldManager"), agent, apply=True
        )
        force = parse_force(request.query.get("force"), apply=True)
        check = _field_check(request)
        body = decode(await read_body(request, self.config.max_body_bytes), YAML_TYPES[0])
        check.duplicates = body.duplicates
        req = ApplyRequest(info, ns, name, body.doc, manager, force, _dry_run(request), check)
        code, result = await server_side_apply(self.verbs, req)
        return json_response(result, code, check.warnings)

    async def _drain_body(self, request: web.Request) -> dict[str, Any]:
        """DeleteOptions from the body, if any (kubectl sends them as JSON)."""
        raw = await read_body(request, self.config.max_body_bytes)
        if not raw.strip():
            return {}
        doc = decode(raw, content_type(request)).doc
        return doc if isinstance(doc, dict) else {}

    async def _watch(
        self, request: web.Request, target: Target, info: ResourceInfo
    ) -> web.StreamResponse:
        q = request.query
        try:
            labels = parse_selector(q.get("labelSelector") or None)
        except InvalidInput as err:
            raise bad_request(str(err)) from None
        field_text = q.get("fieldSelector") or ""
        if target.name is not None:
            field_text = ",".join(t for t in (field_text, f"metadata.name={target.name}") if t)
        req = WatchRequest(
            info=info,
            namespace=target.namespace,
            labels=labels,
            fields=parse_field_selector(field_text, info.plural),
            start=parse_start(q.get("resourceVersion")),
            timeout=parse_timeout(q.get("timeoutSeconds"), self.config.default_watch_timeout),
            bookmarks=_flag(request, "allowWatchBookmarks"),
            write_timeout=self.config.watch_write_timeout,
            bookmark_interval=self.config.bookmark_interval,
            table=self._table_maker(request, info) if wants_table(request) else None,
        )
        return await serve_watch(request, self.store, req, self.watches)

    # ------------------------------------------------------------ output

    def _table_maker(
        self, request: web.Request, info: ResourceInfo
    ) -> Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]]:
        try:
            include = tables.include_object_policy(request.query.get("includeObject"))
        except InvalidInput as err:
            raise bad_request(str(err)) from None

        def make(items: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
            return tables.table_of_stored(
                info.model,
                items,
                include_object=include,
                now=dt.datetime.now(dt.UTC),
                resource_version=str(meta.get("resourceVersion") or ""),
                continue_token=str(meta.get("continue") or ""),
            )

        return make

    def _answer(
        self, request: web.Request, info: ResourceInfo, result: dict[str, Any], listed: bool = False
    ) -> web.Response:
        if not wants_table(request):
            return json_response(result)
        make = self._table_maker(request, info)
        if listed:
            return json_response(make(result["items"], result["metadata"]))
        return json_response(make([result], {}))


def _grace_period(request: web.Request, options: dict[str, Any]) -> int | None:
    """``gracePeriodSeconds`` from the DeleteOptions body or the query (the body wins)."""
    value = options.get("gracePeriodSeconds", request.query.get("gracePeriodSeconds"))
    if value is None:
        return None
    number = None if isinstance(value, bool) else parse_integer(str(value))
    if number is None:
        raise bad_request(
            f"gracePeriodSeconds: Invalid value: {str(value)[:40]!r}: must be an integer"
        )
    return number
