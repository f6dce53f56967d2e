"""The ``kube`` backend's create and get: one request each on the library's REST client.

``kubernetes_asyncio``'s generated calls (``create_namespaced_custom_object``)
check their arguments, walk the whole body through
``sanitize_for_serialization`` to turn model objects into JSON (the backend
sends plain dicts, which it copies as they are), and rebuild the headers
and the URL on every call: about a third of the backend's CPU for a create.
The two verbs every component uses most are sent here straight to the
library's REST client (``ApiClient.rest_client.request``: the same aiohttp
session, TLS context, proxy and timeouts) with headers built once and the
library's own credential step (``ApiClient.update_params_for_auth``, which
runs a kubeconfig's token refresh or exec plugin) on every request. The
other verbs still go through the generated calls (:mod:`kube_calls`).
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import quote

import aiohttp
from kubernetes_asyncio.client import ApiClient

from shiftnet.store.kube_resources import KubeResource

AUTH = ["BearerToken"]  # the generated calls' auth_settings: every one names only this


@functools.lru_cache(maxsize=4096)
def collection_path(res: KubeResource, namespace: str | None) -> str:
    """``/apis/route.openshift.io/v1/namespaces/web/routes``, ``/api/v1/nodes`` (kept:
    a component writes to a few namespaces many times)."""
    root = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
    if res.namespaced and namespace is not None:
        return f"{root}/namespaces/{quote(namespace, safe='')}/{res.plural}"
    return f"{root}/{res.plural}"


def object_path(res: KubeResource, namespace: str | None, name: str) -> str:
    return f"{collection_path(res, namespace)}/{quote(name, safe='')}"


class RestRequests:
    """JSON requests on ``client``'s REST client; each returns the raw aiohttp response."""

    def __init__(self, client: ApiClient, timeout: tuple[float, float]) -> None:
        self._client = client
        self._host = str(client.configuration.host)
        connect, read = timeout
        self._timeout = aiohttp.ClientTimeout(connect=connect, sock_connect=connect, sock_read=read)
        headers = {str(k): str(v) for k, v in client.default_headers.items()}
        if client.cookie:
            headers["Cookie"] = str(client.cookie)
        headers["Accept"] = "application/json"
        headers["Content-Type"] = "application/json"
        self._headers = headers

    async def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = dict(self._headers)
        queries: list[tuple[str, str]] = []  # a credential could go there; none of ours do
        await self._client.update_params_for_auth(headers, queries, AUTH)
        return await self._client.rest_client.request(
            method,
            self._host + path,
            query_params=dict(queries) if queries else None,
            headers=headers,
            body=body,
            _preload_content=False,
            _request_timeout=self._timeout,
        )
