"""Bearer-token authentication: every request but health and version needs a known token.

Known are the admin token and those of the token file (``tokens.py``).

Anything else gets 401 in Kubernetes' ``Status`` shape, which kubectl shows
as "You must be logged in to the server (Unauthorized)".
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from shiftnet.apiserver.status import UNAUTHORIZED
from shiftnet.apiserver.tokens import TokenTable

log = logging.getLogger(__name__)

# Upstream lets anonymous clients read these (system:public-info-viewer).
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def token_of(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def bearer_auth(token: str, others: TokenTable | None = None) -> Middleware:
    expected = token.encode()

    def known(given: str) -> bool:
        admin = hmac.compare_digest(given.encode(), expected)
        return admin or (others is not None and others.user(given) is not None)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PUBLIC_PATHS:
            return await handler(request)
        given = token_of(request)
        if given is None or not known(given):
            log.info(
                "unauthorized request method=%s path=%s peer=%s",
                request.method,
                request.path,
                request.remote,
            )
            return web.json_response(UNAUTHORIZED, status=401)
        return await handler(request)

    return middleware
