"""The ``kube`` backend's HTTP session: the environment read once, not on every request.

``kubernetes_asyncio`` makes its aiohttp session with ``trust_env=True``, so
aiohttp looks for ``~/.netrc`` and the proxy variables on every request, each
in a worker thread: two thread hand-offs and a file lookup per create, about
a tenth of the backend's CPU per request. The same session is rebuilt here
over the library's own connector (its TLS context and pool), with the proxy
that the environment names for the API server's URL found once, at connect
time. ``~/.netrc`` is not consulted: the kubeconfig carries the credentials,
and aiohttp refuses a request with both a netrc login and the bearer token's
``Authorization`` header anyway.
"""

from __future__ import annotations

import contextlib
import logging

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio.client import ApiClient
from yarl import URL

log = logging.getLogger(__name__)

READ_BUFFER = 2**21  # as the library's: a watch event of a large object fits one read


def env_proxy(server: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy ``HTTPS_PROXY``/``HTTP_PROXY`` name for ``server`` (``NO_PROXY`` honoured)."""
    with contextlib.suppress(LookupError):
        return get_env_proxy_for_url(URL(server))
    return None, None


def use_session_without_env_lookups(client: ApiClient, server: str) -> None:
    """Swap ``client``'s session for one that does not read the environment per request."""
    rest = client.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    connector = old.connector
    old.detach()  # the connector moves to the new session; the old one holds nothing
    proxy, proxy_auth = (None, None) if rest.proxy else env_proxy(server)
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        proxy=proxy,
        proxy_auth=proxy_auth,
        read_bufsize=READ_BUFFER,
    )
    shown = proxy.origin() if proxy is not None else (rest.proxy or "none")  # no credentials
    log.debug("kube session server=%s proxy=%s", server, shown)
