"""The ``kubernetes_asyncio`` call for each verb of one resource (but create and get,
which :mod:`shiftnet.store.kube_rest` sends as one request each).

Core kinds go through the core API's typed calls (``read_namespaced_pod``,
``replace_node_status``), every other group through the custom-objects calls
(``replace_namespaced_custom_object_status``), which speak to any group and
version. Every call is made with ``_preload_content=False``: the backend
gets the raw response and decodes the JSON itself, so an object comes back
exactly as the server sent it (no round trip through the library's models,
which would drop fields they do not know).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kubernetes_asyncio.client import CoreV1Api, CustomObjectsApi, V1DeleteOptions

from shiftnet.store.kube_resources import KubeResource


class ResourceCalls:
    """The library calls for one resource; each returns the raw aiohttp response."""

    def __init__(self, core: CoreV1Api, custom: CustomObjectsApi, res: KubeResource) -> None:
        self.core = core
        self.custom = custom
        self.res = res

    def _core(self, verb: str, namespaced: bool, status: bool = False) -> Any:
        scope = "namespaced_" if namespaced else ""
        suffix = "_status" if status else ""
        return getattr(self.core, f"{verb}_{scope}{self.res.core_name}{suffix}")

    def list(self, namespace: str | None, **query: Any) -> Awaitable[Any]:
        r = self.res
        if r.core:
            name = r.core_name
            if not r.namespaced:
                return getattr(self.core, f"list_{name}")(**query)  # type: ignore[no-any-return]
            if namespace:
                return getattr(self.core, f"list_namespaced_{name}")(namespace, **query)  # type: ignore[no-any-return]
            return getattr(self.core, f"list_{name}_for_all_namespaces")(**query)  # type: ignore[no-any-return]
        if not r.namespaced:
            return self.custom.list_cluster_custom_object(r.group, r.version, r.plural, **query)
        if namespace:
            return self.custom.list_namespaced_custom_object(
                r.group, r.version, namespace, r.plural, **query
            )
        return self.custom.list_custom_object_for_all_namespaces(
            r.group, r.version, r.plural, **query
        )

    def replace(
        self,
        namespace: str | None,
        name: str,
        body: dict[str, Any],
        *,
        status: bool = False,
        **opts: Any,
    ) -> Awaitable[Any]:
        """PUT the object, or (``status``) its ``/status`` subresource."""
        r = self.res
        if r.core:
            if r.namespaced:
                return self._core("replace", True, status)(name, namespace, body, **opts)  # type: ignore[no-any-return]
            return self._core("replace", False, status)(name, body, **opts)  # type: ignore[no-any-return]
        if r.namespaced:
            call = (
                self.custom.replace_namespaced_custom_object_status
                if status
                else self.custom.replace_namespaced_custom_object
            )
            return call(r.group, r.version, namespace or "", r.plural, name, body, **opts)
        cluster = (
            self.custom.replace_cluster_custom_object_status
            if status
            else self.custom.replace_cluster_custom_object
        )
        return cluster(r.group, r.version, r.plural, name, body, **opts)

    def delete(
        self, namespace: str | None, name: str, body: V1DeleteOptions, **opts: Any
    ) -> Awaitable[Any]:
        r = self.res
        if r.core:
            if r.namespaced:
                return self._core("delete", True)(name, namespace, body=body, **opts)  # type: ignore[no-any-return]
            return self._core("delete", False)(name, body=body, **opts)  # type: ignore[no-any-return]
        if r.namespaced:
            return self.custom.delete_namespaced_custom_object(
                r.group, r.version, namespace or "", r.plural, name, body=body, **opts
            )
        return self.custom.delete_cluster_custom_object(
            r.group, r.version, r.plural, name, body=body, **opts
        )

    def discover(self, **opts: Any) -> Awaitable[Any]:
        """The resource list of this resource's group and version (with subresources)."""
        r = self.res
        if r.core:
            return self.core.get_api_resources(**opts)
        return self.custom.get_api_resources(r.group, r.version, **opts)
