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

from shiftnet.apiserver.pki import ADMIN_USER
from shiftnet.apiserver.selfreviews import USER_KEY
from shiftnet.apiserver.status import UNAUTHORIZED
from shiftnet.apiserver.tokens import TokenTable, TokenUser

log = logging.getLogger(__name__)

# Upstream lets anonymous clients read these (system:public-info-viewer).
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})

# The admin token's user, as a kubeadm cluster's admin.conf: in system:masters.
ADMIN = TokenUser(ADMIN_USER, "", ("system:masters",))

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def token_of(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def bearer_auth(token: str, others: TokenTable | None = None) -> Middleware:
    """Known tokens pass, with who they are in ``request[USER_KEY]`` (the self reviews)."""
    expected = token.encode()

    def known(given: str) -> TokenUser | None:
        if hmac.compare_digest(given.encode(), expected):
            return ADMIN
        return others.user(given) if others is not None else None

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PUBLIC_PATHS:
            return await handler(request)
        given = token_of(request)
        user = known(given) if given is not None else None
        if user is None:
            log.info(
                "unauthorized request method=%s path=%s peer=%s",
                request.method,
                request.path,
                request.remote,
            )
            return web.json_response(UNAUTHORIZED, status=401)
        request[USER_KEY] = user
        return await handler(request)

    return middleware
