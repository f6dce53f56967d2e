"""The etcd v3 backend, through etcd's own JSON gateway (``/v3/kv/*``, ``/v3/watch``).

Keys are laid out like Kubernetes: ``/registry/<resource>/<namespace>/<name>``
(cluster-scoped objects: ``/registry/<resource>/<name>``). etcd's
``mod_revision`` is the resourceVersion and etcd's watch is the watch, so
several machines share one cluster. The gateway avoids a gRPC dependency and is
served by every etcd 3.4+ server.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import AsyncIterator
from typing import Any

import httpx

from shiftnet.api.selectors import parse_selector
from shiftnet.errors import (
    AlreadyExists,
    ConfigError,
    Conflict,
    Expired,
    NotFound,
    StoreUnavailable,
    shorten,
)
from shiftnet.store.base import EventType, ListResult, WatchEvent
from shiftnet.store.meta import key_of, prepare_create, prepare_update, with_revision

log = logging.getLogger(__name__)

PREFIX = "/registry"
DEFAULT_TIMEOUT = 10.0  # seconds: connect, write and pool (x3); watches never time out reading


def _b64(s: str | bytes) -> str:
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def _unb64(s: str) -> bytes:
    return base64.b64decode(s)


def _prefix_end(prefix: str) -> str:
    """etcd's range_end for "every key starting with prefix"."""
    raw = bytearray(prefix.encode())
    raw[-1] += 1
    return _b64(bytes(raw))


def object_key(resource: str, namespace: str | None, name: str) -> str:
    if namespace:
        return f"{PREFIX}/{resource}/{namespace}/{name}"
    return f"{PREFIX}/{resource}/{name}"


def resource_prefix(resource: str, namespace: str | None = None) -> str:
    if namespace:
        return f"{PREFIX}/{resource}/{namespace}/"
    return f"{PREFIX}/{resource}/"


def endpoints_from_url(url: str) -> list[str]:
    """``etcd://h1:p1,h2:p2`` → ``["http://h1:p1", "http://h2:p2"]`` (options ignored)."""
    hosts = url[len("etcd://") :].partition("?")[0].strip("/")
    return [f"http://{h}" for h in hosts.split(",") if h]


def timeout_from_url(url: str) -> float:
    """The request timeout ``etcd://...?timeout=SECONDS`` asks for (default 10 s).

    Like ``kube://...?context=NAME``, the URL is the one place a store is configured,
    so every component and ``--store``/``SHIFTNET_STORE`` accept it unchanged.
    """
    _, sep, query = url.partition("?")
    if not sep:
        return DEFAULT_TIMEOUT
    key, eq, value = query.partition("=")
    if key != "timeout" or not eq:
        raise ConfigError(
            f'store URL "{shorten(url)}": the only option is ?timeout=SECONDS '
            "(the etcd request timeout)"
        )
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigError(
            f'store URL "{shorten(url)}": option timeout must be a positive number of '
            f'seconds, not "{shorten(value)}"'
        )
    return seconds


_OPERATIONS = {
    "/v3/kv/range": "read",
    "/v3/kv/put": "write",
    "/v3/kv/txn": "write",
    "/v3/kv/deleterange": "delete",
    "/v3/kv/compaction": "compaction",
    "/v3/watch": "watch",
}


def describe_failure(exc: Exception, timeout: float) -> str:
    """What went wrong talking to one endpoint, as a user reads it (httpx's own text
    is often empty: ``ReadTimeout: ``)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection timed out after {timeout:g} s"
    if isinstance(exc, httpx.PoolTimeout):
        return f"no free connection within {timeout * 3:g} s"
    if isinstance(exc, httpx.TimeoutException):
        return f"request timed out after {timeout:g} s"
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        if "refused" in text.lower():
            return "connection refused (is etcd running there?)"
        return f"cannot connect: {text or type(exc).__name__}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the connection broke: {exc or type(exc).__name__}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class EtcdStore:
    def __init__(self, url: str, *, timeout: float | None = None) -> None:
        """``timeout`` (seconds) overrides the URL's ``?timeout=``."""
        self.url = url
        self.endpoints = endpoints_from_url(url)
        if not self.endpoints:
            raise StoreUnavailable(f'store URL "{url}" names no etcd host')
        self._timeout = timeout_from_url(url) if timeout is None else timeout
        self._client: httpx.AsyncClient | None = None
        self._current = 0

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # Every watch holds one streaming connection for its lifetime, so the pool
            # must be far larger than the number of informers plus concurrent requests.
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout, read=None, pool=self._timeout * 3),
                limits=httpx.Limits(max_connections=1024, max_keepalive_connections=64),
            )
        return self._client

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST to the first endpoint that answers; rotate on connection errors.

        Failing, the error says what was asked (``read``, ``write``...) and what each
        endpoint did: ``cannot reach etcd at http://h:2379 (read): request timed out after 10 s``.
        """
        failures: list[str] = []
        what = _OPERATIONS.get(path, path)
        for i in range(len(self.endpoints)):
            ep = self.endpoints[(self._current + i) % len(self.endpoints)]
            try:
                resp = await self._http().post(ep + path, json=body, timeout=self._timeout)
            except httpx.HTTPError as exc:
                failures.append(f"{ep} ({what}): {describe_failure(exc, self._timeout)}")
                continue
            self._current = (self._current + i) % len(self.endpoints)
            if resp.status_code != 200:
                detail = shorten(" ".join(resp.text.split()), 300)
                raise StoreUnavailable(
                    f"etcd at {ep}: {what} refused with HTTP {resp.status_code}: {detail}"
                )
            out: dict[str, Any] = resp.json()
            return out
        raise StoreUnavailable("cannot reach etcd at " + "; at ".join(failures))

    @staticmethod
    def _decode_kv(kv: dict[str, Any]) -> dict[str, Any]:
        obj: dict[str, Any] = json.loads(_unb64(kv["value"]))
        return with_revision(obj, int(kv["mod_revision"]))

    async def _range_one(self, key: str) -> dict[str, Any] | None:
        res = await self._call("/v3/kv/range", {"key": _b64(key)})
        kvs = res.get("kvs") or []
        return kvs[0] if kvs else None

    # ------------------------------------------------------------ reads

    async def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        kv = await self._range_one(object_key(resource, namespace, name))
        if kv is None:
            raise NotFound(resource, namespace, name)
        return self._decode_kv(kv)

    async def list(
        self, resource: str, namespace: str | None = None, selector: str | None = None
    ) -> ListResult:
        sel = parse_selector(selector)
        prefix = resource_prefix(resource, namespace)
        res = await self._call(
            "/v3/kv/range", {"key": _b64(prefix), "range_end": _prefix_end(prefix)}
        )
        items = [self._decode_kv(kv) for kv in res.get("kvs") or []]
        if namespace is None:
            # a cluster-wide list must not mix "ns/name" and "name" keys of other shapes
            items = [o for o in items if key_of(o)[1]]
        items.sort(key=key_of)
        if not sel.empty:
            items = [o for o in items if sel.matches((o.get("metadata") or {}).get("labels"))]
        return ListResult(items=items, revision=int(res["header"]["revision"]))

    async def revision(self) -> int:
        res = await self._call("/v3/kv/range", {"key": _b64(PREFIX), "limit": 1})
        return int(res["header"]["revision"])

    # ------------------------------------------------------------ writes

    async def _txn_put(
        self, key: str, compare: dict[str, Any], value: dict[str, Any]
    ) -> tuple[bool, int]:
        body = {
            "compare": [{"key": _b64(key), **compare}],
            "success": [{"request_put": {"key": _b64(key), "value": _b64(json.dumps(value))}}],
        }
        res = await self._call("/v3/kv/txn", body)
        return bool(res.get("succeeded")), int(res["header"]["revision"])

    async def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        ns, name = key_of(obj)
        fresh = prepare_create(obj)
        key = object_key(resource, ns, name)
        ok, rev = await self._txn_put(
            key, {"target": "CREATE", "result": "EQUAL", "create_revision": "0"}, fresh
        )
        if not ok:
            raise AlreadyExists(resource, ns or None, name)
        return with_revision(fresh, rev)

    async def update(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        ns, name = key_of(obj)
        want = (obj.get("metadata") or {}).get("resourceVersion")
        key = object_key(resource, ns, name)
        while True:
            kv = await self._range_one(key)
            if kv is None:
                raise NotFound(resource, ns or None, name)
            mod = str(kv["mod_revision"])
            if want and str(want) != mod:
                raise Conflict(resource, ns or None, name)
            new = prepare_update(json.loads(_unb64(kv["value"])), obj)
            ok, rev = await self._txn_put(
                key, {"target": "MOD", "result": "EQUAL", "mod_revision": mod}, new
            )
            if ok:
                return with_revision(new, rev)
            if want:
                raise Conflict(resource, ns or None, name)

    async def delete(
        self, resource: str, namespace: str | None, name: str, resource_version: str | None = None
    ) -> dict[str, Any]:
        key = object_key(resource, namespace, name)
        while True:
            kv = await self._range_one(key)
            if kv is None:
                raise NotFound(resource, namespace, name)
            mod = str(kv["mod_revision"])
            if resource_version and str(resource_version) != mod:
                raise Conflict(resource, namespace, name)
            body = {
                "compare": [
                    {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": mod}
                ],
                "success": [{"request_delete_range": {"key": _b64(key)}}],
            }
            res = await self._call("/v3/kv/txn", body)
            if res.get("succeeded"):
                last = json.loads(_unb64(kv["value"]))
                return with_revision(last, int(res["header"]["revision"]))
            if resource_version:
                raise Conflict(resource, namespace, name)

    async def compact(self, revision: int) -> None:
        await self._call("/v3/kv/compaction", {"revision": str(revision), "physical": True})

    # ------------------------------------------------------------ watch

    async def watch(
        self, resource: str, revision: int, namespace: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        prefix = resource_prefix(resource, namespace)
        body = {
            "create_request": {
                "key": _b64(prefix),
                "range_end": _prefix_end(prefix),
                "start_revision": str(revision + 1),
                "prev_kv": True,
            }
        }
        last_error: Exception | None = None
        for ep in self.endpoints:
            try:
                async with self._http().stream("POST", ep + "/v3/watch", json=body) as resp:
                    async for line in resp.aiter_lines():
                        if not line.strip():
                            continue
                        msg = json.loads(line)
                        if "error" in msg:
                            raise StoreUnavailable(f"etcd watch failed: {msg['error']}")
                        result = msg.get("result") or {}
                        compact = int(result.get("compact_revision") or 0)
                        if compact:
                            raise Expired(revision, compact)
                        if result.get("canceled"):
                            raise StoreUnavailable(
                                f"etcd cancelled the watch: {result.get('cancel_reason', '')}"
                            )
                        for ev in result.get("events") or []:
                            yield self._event(resource, ev)
                last_error = StoreUnavailable("the watch stream ended")
            except httpx.HTTPError as exc:
                last_error = StoreUnavailable(describe_failure(exc, self._timeout))
                continue
        raise StoreUnavailable(f"etcd watch lost at {', '.join(self.endpoints)}: {last_error}")

    def _event(self, resource: str, ev: dict[str, Any]) -> WatchEvent:
        kv = ev["kv"]
        rev = int(kv["mod_revision"])
        if ev.get("type") == "DELETE":
            prev = ev.get("prev_kv")
            obj = json.loads(_unb64(prev["value"])) if prev else self._stub(kv["key"])
            return WatchEvent("DELETED", resource, with_revision(obj, rev), rev)
        etype: EventType = (
            "ADDED" if kv.get("create_revision") == kv["mod_revision"] else "MODIFIED"
        )
        return WatchEvent(etype, resource, self._decode_kv(kv), rev)

    @staticmethod
    def _stub(key_b64: str) -> dict[str, Any]:
        parts = _unb64(key_b64).decode().split("/")[3:]
        ns, name = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[-1])
        meta: dict[str, Any] = {"name": name}
        if ns:
            meta["namespace"] = ns
        return {"metadata": meta}

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
