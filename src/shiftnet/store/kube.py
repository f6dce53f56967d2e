"""The ``kube`` backend: the Store protocol spoken to any Kubernetes API.

shiftnet's own API server or a real cluster's: the backend needs only a
kubeconfig (``kube:///path/kubeconfig``). Requests go through
``kubernetes_asyncio`` (TLS, credentials, contexts and exec plugins are the
library's); the JSON is decoded here so objects keep every field.

* resourceVersion is the revision: both are the API server's etcd revision,
  an integer on every etcd-backed server (shiftnet's included).
* A watch asks for bookmarks and, when the server ends the stream
  (``timeoutSeconds``), resumes from the last revision it saw; a ``410``
  (too old a revision) becomes :class:`Expired`, and the informer relists.
* Kinds with a ``status`` subresource (pods, services, nodes, namespaces,
  routes: as the server's discovery says) take status only through
  ``/status``, as on any Kubernetes API, and RBAC grants the two apart. So
  ``update`` reads the object and sends a plain update only if something
  outside status changed, then ``/status`` only if status changed (pinned to
  the first write); ``create`` with a status writes it the same way.
* ``compact`` is not part of the Kubernetes API: the server compacts its own
  history, so it raises :class:`ConfigError`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import aiohttp
from kubernetes_asyncio.client import (
    ApiClient,
    Configuration,
    CoreV1Api,
    CustomObjectsApi,
    V1DeleteOptions,
    V1Preconditions,
)
from kubernetes_asyncio.config import load_kube_config
from kubernetes_asyncio.config.config_exception import ConfigException

from shiftnet.api.selectors import parse_selector
from shiftnet.errors import ConfigError, Conflict, Expired, NotFound, StoreUnavailable
from shiftnet.store.base import EventType, ListResult, WatchEvent
from shiftnet.store.kube_calls import ResourceCalls
from shiftnet.store.kube_diff import object_changed, status_changed
from shiftnet.store.kube_resources import KubeResource, parse_kube_url, resource_for
from shiftnet.store.kube_rest import RestRequests, collection_path, object_path
from shiftnet.store.kube_session import use_session_without_env_lookups
from shiftnet.store.kube_status import Call, error_for
from shiftnet.store.meta import key_of

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = (10.0, 30.0)  # connect, read (seconds) for every call but watches
WATCH_SECONDS = 240  # the server ends each watch request after this; the backend resumes
LIST_PAGE = 500  # objects per list request (limit/continue), as client-go's reflector
POOL_SIZE = 256  # concurrent connections: every watch holds one for its lifetime
_SERVER_SET = frozenset({"resourceVersion", "uid", "creationTimestamp"})  # a create leaves out
_EVENT_TYPES: dict[str, EventType] = {
    "ADDED": "ADDED",
    "MODIFIED": "MODIFIED",
    "DELETED": "DELETED",
}


def _rv(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _revision(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise StoreUnavailable(
            f'{what}: resourceVersion "{text[:40]}" is not an integer; the kube store needs '
            "an etcd-backed API server"
        ) from None


class KubeStore:
    def __init__(self, url: str, env: dict[str, str] | None = None) -> None:
        self.url = url
        self.target = parse_kube_url(url, os.environ if env is None else env)
        self.server = ""
        self._client: ApiClient | None = None
        self._core: CoreV1Api | None = None
        self._custom: CustomObjectsApi | None = None
        self._rest: RestRequests | None = None
        self._connecting = asyncio.Lock()
        # group/version -> names the server lists there ("routes", "routes/status")
        self._served: dict[str, frozenset[str]] = {}

    # ------------------------------------------------------------ plumbing

    async def _connect(self) -> tuple[CoreV1Api, CustomObjectsApi]:
        async with self._connecting:
            if self._core is None or self._custom is None:
                path = self.target.kubeconfig
                if not path.is_file():
                    raise ConfigError(f"kubeconfig {path} does not exist (store {self.url})")
                config = Configuration()
                try:
                    await load_kube_config(
                        config_file=str(path),
                        context=self.target.context,
                        client_configuration=config,
                        persist_config=False,
                    )
                except (ConfigException, OSError, ValueError) as exc:
                    raise ConfigError(f"kubeconfig {path} cannot be used: {exc}") from None
                config.connection_pool_maxsize = POOL_SIZE
                self.server = str(config.host)
                self._client = ApiClient(configuration=config)
                use_session_without_env_lookups(self._client, self.server)
                self._core = CoreV1Api(self._client)
                self._custom = CustomObjectsApi(self._client)
                self._rest = RestRequests(self._client, REQUEST_TIMEOUT)
            return self._core, self._custom

    async def _direct(self) -> RestRequests:
        """The create and get requests (:mod:`kube_rest`), connected on first use."""
        if self._rest is None:
            await self._connect()
        assert self._rest is not None
        return self._rest

    async def _calls(self, resource: str) -> tuple[KubeResource, ResourceCalls]:
        res = resource_for(resource)
        core, custom = await self._connect()
        return res, ResourceCalls(core, custom, res)

    def _call(self, verb: str, res: KubeResource, namespace: str | None, name: str) -> Call:
        return Call(verb, res.qualified, namespace if res.namespaced else None, name, self.server)

    async def _send(self, call: Call, request: Awaitable[Any], revision: int = 0) -> Any:
        """The decoded JSON of one answer, or the store's error for it."""
        try:
            resp = await request
            try:
                data = await resp.read()
            finally:
                resp.release()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise StoreUnavailable(
                f"cannot reach the API server at {self.server} ({call.subject}): "
                f"{exc or type(exc).__name__}"
            ) from None
        try:
            body = json.loads(data) if data else {}
        except ValueError:
            body = {"message": data[:200].decode(errors="replace")}
        if not 200 <= resp.status < 300:
            raise error_for(resp.status, body, call, revision)
        return body

    async def _subresources(self, res: KubeResource, calls: ResourceCalls) -> frozenset[str]:
        """What the server serves in the resource's group/version (discovery, cached)."""
        served = self._served.get(res.group_version)
        if served is None:
            call = Call("discover", res.group_version, None, "", self.server)
            try:
                doc = await self._send(call, calls.discover(**self._opts()))
            except NotFound:
                doc = {}
            names = {str(r.get("name")) for r in doc.get("resources") or [] if isinstance(r, dict)}
            served = frozenset(names)
            self._served[res.group_version] = served
        if res.plural not in served:
            raise ConfigError(
                f"the API server at {self.server} does not serve {res.qualified} "
                f"({res.group_version}); a real cluster needs the {res.kind} kind installed"
            )
        return served

    async def _has_status(self, res: KubeResource, calls: ResourceCalls) -> bool:
        return f"{res.plural}/status" in await self._subresources(res, calls)

    @staticmethod
    def _opts() -> dict[str, Any]:
        return {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}

    @staticmethod
    def _namespace(res: KubeResource, namespace: str | None) -> str | None:
        return namespace if res.namespaced else None

    # ------------------------------------------------------------ reads

    async def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        res = resource_for(resource)
        rest = await self._direct()
        ns = self._namespace(res, namespace)
        out: dict[str, Any] = await self._send(
            self._call("get", res, ns, name), rest.send("GET", object_path(res, ns, name))
        )
        return out

    async def list(
        self, resource: str, namespace: str | None = None, selector: str | None = None
    ) -> ListResult:
        parse_selector(selector)  # a bad selector is the caller's error, before any request
        res, calls = await self._calls(resource)
        ns = self._namespace(res, namespace)
        call = self._call("list", res, ns, "")
        items: list[dict[str, Any]] = []
        token = ""
        revision = ""
        while True:
            query: dict[str, Any] = {"limit": LIST_PAGE, **self._opts()}
            if selector:
                query["label_selector"] = selector
            if token:
                query["_continue"] = token
            try:
                page = await self._send(call, calls.list(ns, **query))
            except Expired:
                # the continue token outlived the server's history: start the list again
                items, token, revision = [], "", ""
                continue
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            revision = revision or str(meta.get("resourceVersion") or "0")
            token = str(meta.get("continue") or "")
            if not token:
                break
        kind, api_version = res.kind, res.group_version
        for obj in items:  # list items carry no kind; the store's objects always do
            obj.setdefault("apiVersion", api_version)
            obj.setdefault("kind", kind)
        items.sort(key=key_of)
        return ListResult(items=items, revision=_revision(revision, call.subject))

    async def revision(self) -> int:
        res, calls = await self._calls("namespaces")
        call = self._call("list", res, None, "")
        page = await self._send(call, calls.list(None, limit=1, **self._opts()))
        return _revision(_rv(page) or "0", call.subject)

    # ------------------------------------------------------------ writes

    async def _write_status(
        self,
        res: KubeResource,
        calls: ResourceCalls,
        written: dict[str, Any],
        wanted: dict[str, Any],
    ) -> dict[str, Any]:
        """Put ``wanted``'s status on ``written`` through ``/status``, pinned to ``written``."""
        body = copy.deepcopy(written)
        if "status" in wanted:
            body["status"] = copy.deepcopy(wanted["status"])
        else:
            body.pop("status", None)
        ns, name = key_of(written)
        ns_or_none = self._namespace(res, ns)
        out: dict[str, Any] = await self._send(
            self._call("update status of", res, ns_or_none, name),
            calls.replace(ns_or_none, name, body, status=True, **self._opts()),
        )
        return out

    async def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        res = resource_for(resource)
        ns, name = key_of(obj)
        ns_or_none = self._namespace(res, ns)
        # Only metadata changes, so only it is copied: the rest is encoded as it is.
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_SET}
        body = {**obj, "metadata": meta}
        rest = await self._direct()
        created: dict[str, Any] = await self._send(
            self._call("create", res, ns_or_none, name),
            rest.send("POST", collection_path(res, ns_or_none), body),
        )
        if not status_changed(created, obj):
            return created
        _, calls = await self._calls(resource)
        if not await self._has_status(res, calls):
            return created
        return await self._write_status(res, calls, created, obj)

    async def update(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        res, calls = await self._calls(resource)
        ns, name = key_of(obj)
        ns_or_none = self._namespace(res, ns)
        call = self._call("update", res, ns_or_none, name)
        pinned = _rv(obj)
        with_status = await self._has_status(res, calls)
        while True:
            try:
                if with_status:
                    return await self._update_parts(res, calls, obj, pinned)
                body = copy.deepcopy(obj)
                if not pinned:
                    # unconditional, as the store protocol says: pin to what is there now,
                    # and read again if someone wrote in between
                    current = await self.get(resource, ns_or_none, name)
                    body.setdefault("metadata", {})["resourceVersion"] = _rv(current)
                out: dict[str, Any] = await self._send(
                    call, calls.replace(ns_or_none, name, body, **self._opts())
                )
                return out
            except Conflict:
                if pinned:
                    raise

    async def _update_parts(
        self, res: KubeResource, calls: ResourceCalls, obj: dict[str, Any], pinned: str
    ) -> dict[str, Any]:
        """Update a kind with a status subresource: the object through a plain update and
        the status through ``/status``, each only when it changed (one request for a
        controller that writes only status, and only the permission that needs)."""
        ns, name = key_of(obj)
        ns_or_none = self._namespace(res, ns)
        call = self._call("update", res, ns_or_none, name)
        current = await self.get(res.plural, ns_or_none, name)
        if pinned and pinned != _rv(current):
            raise error_for(409, {}, call)
        written = current
        if object_changed(current, obj):
            body = copy.deepcopy(obj)
            body.setdefault("metadata", {})["resourceVersion"] = _rv(current)
            written = await self._send(call, calls.replace(ns_or_none, name, body, **self._opts()))
        if status_changed(written, obj):
            written = await self._write_status(res, calls, written, obj)
        return written

    async def delete(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        resource_version: str | None = None,
        *,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """As the protocol says; ``grace_period_seconds`` is passed on (a node agent removes
        a pod it has stopped with 0, as a kubelet does; the API's default applies without)."""
        res, calls = await self._calls(resource)
        ns = self._namespace(res, namespace)
        call = self._call("delete", res, ns, name)
        while True:
            # The answer may be a Status rather than the object: read it first, and delete
            # exactly that state (uid and resourceVersion preconditions).
            current = await self.get(resource, ns, name)
            meta = current.get("metadata") or {}
            if resource_version and str(resource_version) != _rv(current):
                raise error_for(409, {}, call)
            options = V1DeleteOptions(
                grace_period_seconds=grace_period_seconds,
                preconditions=V1Preconditions(uid=meta.get("uid"), resource_version=_rv(current)),
            )
            try:
                answer = await self._send(call, calls.delete(ns, name, options, **self._opts()))
            except (NotFound, Conflict):
                if resource_version:
                    raise
                continue  # changed or deleted meanwhile: read again (NotFound comes from there)
            if isinstance(answer, dict) and answer.get("kind") not in (None, "Status"):
                return answer
            return current

    async def compact(self, revision: int) -> None:
        raise ConfigError(
            "the kube store cannot compact: the Kubernetes API has no such request; "
            "the API server compacts its own history"
        )

    # ------------------------------------------------------------ watch

    async def watch(
        self, resource: str, revision: int, namespace: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        res, calls = await self._calls(resource)
        ns = self._namespace(res, namespace)
        call = self._call("watch", res, ns, "")
        cursor = revision
        while True:
            query: dict[str, Any] = {
                "watch": True,
                "resource_version": str(cursor),
                "allow_watch_bookmarks": True,
                "timeout_seconds": WATCH_SECONDS,
                "_preload_content": False,
                "_request_timeout": (REQUEST_TIMEOUT[0], WATCH_SECONDS + 30.0),
            }
            try:
                resp = await calls.list(ns, **query)
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise StoreUnavailable(
                    f"cannot reach the API server at {self.server} ({call.subject}): "
                    f"{exc or type(exc).__name__}"
                ) from None
            try:
                if not 200 <= resp.status < 300:
                    data = await resp.read()
                    try:
                        body = json.loads(data) if data else {}
                    except ValueError:
                        body = {}
                    raise error_for(resp.status, body, call, cursor)
                async for etype, rev, obj in self._events(resp, res, call, cursor):
                    cursor = rev
                    if obj is not None:
                        yield WatchEvent(etype, res.plural, obj, rev)
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise StoreUnavailable(
                    f"the watch of {res.qualified} at {self.server} broke: "
                    f"{exc or type(exc).__name__}"
                ) from None
            finally:
                resp.release()
            log.debug("watch resumed resource=%s revision=%s", res.plural, cursor)

    async def _events(
        self, resp: Any, res: KubeResource, call: Call, cursor: int
    ) -> AsyncIterator[tuple[EventType, int, dict[str, Any] | None]]:
        """(type, revision, object) of each line of one watch response; a bookmark has no
        object: it only moves the revision to resume from."""
        while True:
            line = await resp.content.readline()
            if not line:
                return
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
                etype = str(msg["type"])
                obj = msg["object"]
                if not isinstance(obj, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                raise StoreUnavailable(
                    f"the API server at {self.server} sent a watch line that is not an event "
                    f"({call.subject})"
                ) from None
            if etype == "ERROR":
                raise error_for(int(obj.get("code") or 500), obj, call, cursor)
            rev = _revision(_rv(obj), call.subject)
            known = _EVENT_TYPES.get(etype)
            if known is not None:
                obj.setdefault("apiVersion", res.group_version)
                obj.setdefault("kind", res.kind)
                yield known, rev, obj
            else:  # BOOKMARK
                yield "MODIFIED", rev, None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
            self._core = None
            self._custom = None
            self._rest = None
