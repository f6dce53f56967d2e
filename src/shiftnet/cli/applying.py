"""``apply`` of decoded manifests: the library's apply, with errors naming the document.

The semantics (merge, checks, create-or-update) are :mod:`shiftnet.applying`;
this adds only what belongs to files a user wrote: every check first, then
each write, every error led by the document's place.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from shiftnet.api import Resource, Service
from shiftnet.applying import Applied, ServiceIPCheck, apply_object, check_rules, check_version
from shiftnet.cli.manifests import Document
from shiftnet.client import Client
from shiftnet.errors import InvalidInput, ShiftnetError, StoreUnavailable


async def apply_documents(
    client: Client, docs: Sequence[Document], objects: Sequence[Resource]
) -> AsyncIterator[tuple[Document, Applied]]:
    """``apply`` of decoded manifests: check each against the stored object (create or
    update rules) and every pinned resourceVersion first, then create/update each in
    order, yielding as it goes. Errors name the document."""
    services = ServiceIPCheck(client)
    for doc, obj in zip(docs, objects, strict=True):
        try:
            await check_rules(client, obj)
            await check_version(client, obj)
            if isinstance(obj, Service):
                await services.check(obj)
        except StoreUnavailable:
            raise
        except ShiftnetError as err:
            raise InvalidInput(f"{doc.where}: {err}") from None
    for doc, obj in zip(docs, objects, strict=True):
        try:
            result = await apply_object(client, obj)
        except StoreUnavailable:
            raise
        except ShiftnetError as err:
            raise InvalidInput(f"{doc.where}: {err}") from None
        yield doc, result
