"""HTTP answers of ``/api`` and ``/apis``: aggregated or unaggregated by ``Accept``.

The aggregated documents depend only on the resource table, which is fixed
while the server runs, so each is encoded and hashed once. Every answer says
``Vary: Accept`` because the same URL has two forms, and an aggregated one
carries an ``ETag``: a client whose ``If-None-Match`` names it gets
``304 Not Modified`` and no body.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from aiohttp import web

from shiftnet.apiserver.aggregated_discovery import (
    AggregatedVersion,
    Root,
    document_bytes,
    group_discovery_list,
    media_type,
)
from shiftnet.apiserver.discovery_accept import etag_matches, etag_of, negotiate

log = logging.getLogger(__name__)


@functools.cache
def _aggregated(root: Root, version: AggregatedVersion) -> tuple[bytes, str]:
    body = document_bytes(group_discovery_list(root, version))
    return body, etag_of(body)


def discovery_response(request: web.Request, root: Root, legacy: dict[str, Any]) -> web.Response:
    """The answer to ``GET root``: ``legacy`` unless the ``Accept`` asks for aggregation."""
    version = negotiate(request.headers.get("Accept", ""))
    if version is None:
        return web.Response(
            body=json.dumps(legacy, separators=(",", ":")).encode(),
            content_type="application/json",
            headers={"Vary": "Accept"},
        )
    body, etag = _aggregated(root, version)
    headers = {"Vary": "Accept", "ETag": etag}
    if etag_matches(request.headers.get("If-None-Match", ""), etag):
        log.debug("discovery not modified root=%s version=%s", root, version)
        return web.Response(status=304, headers=headers)
    headers["Content-Type"] = media_type(version)
    return web.Response(body=body, headers=headers)
