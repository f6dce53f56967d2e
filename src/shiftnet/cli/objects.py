"""Manifest documents become typed, namespaced, validated objects, or one sentence why not."""

from __future__ import annotations

from typing import Any

from shiftnet.api import Resource, kind_for_kind, parse_object
from shiftnet.cli.manifests import Document
from shiftnet.errors import NAME_LIMIT, InvalidInput, InvalidObject, ShiftnetError, shorten

DEFAULT_NAMESPACE = "default"


def _validate(obj: Resource, may_exist: bool) -> None:
    from shiftnet.api.validation import validate, validate_standing

    if may_exist:
        validate_standing(obj)  # the rest once the stored object is known
    else:
        validate(obj)


def _label(data: Any) -> str:
    """``Route "web"`` for an object the parser refused, when that much can be read."""
    if not isinstance(data, dict):
        return ""
    kind: str = data["kind"] if isinstance(data.get("kind"), str) else ""
    if kind_for_kind(kind) is None:
        kind = ""  # an unknown kind is the error itself; name the object plainly
    meta = data.get("metadata")
    raw = meta.get("name") if isinstance(meta, dict) else None
    name = shorten(raw, NAME_LIMIT) if isinstance(raw, str) else ""
    if kind and name:
        return f'{kind} "{name}": '
    if name:
        return f'object "{name}": '
    return ""


def decode_document(
    doc: Document, namespace: str | None, *, validate: bool = True, may_exist: bool = False
) -> Resource:
    """Parse, default the namespace (``-n`` or ``default``) and validate one document.

    With ``may_exist`` (``apply``) only the rules an update of any stored
    object must meet are checked here; the caller checks the rest against
    the stored object. Raises :class:`InvalidInput` whose message starts
    with the document's place.
    """
    try:
        obj = parse_object(doc.data)
    except ShiftnetError as err:
        raise InvalidInput(f"{doc.where}: {_with_label(err, doc.data)}") from None
    cls = type(obj)
    if cls.NAMESPACED:
        own = obj.metadata.namespace
        if namespace and own and own != namespace:
            name, ns = shorten(obj.name, NAME_LIMIT), shorten(own, NAME_LIMIT)
            raise InvalidInput(
                f'{doc.where}: {cls.KIND} "{name}": the namespace from the provided object '
                f'"{ns}" does not match the namespace "{namespace}"; pass -n {ns} or remove '
                "metadata.namespace"
            )
        obj.metadata.namespace = own or namespace or DEFAULT_NAMESPACE
    else:
        obj.metadata.namespace = None
    if not obj.metadata.name:
        raise InvalidInput(f"{doc.where}: {cls.KIND} is invalid: metadata.name: Required value")
    if validate:
        try:
            _validate(obj, may_exist)
        except ShiftnetError as err:
            raise InvalidInput(f"{doc.where}: {err}") from None
    return obj


def _with_label(err: ShiftnetError, data: Any) -> str:
    """The parser's message, naming the object once (``Route "web": ...``)."""
    text = str(err)
    if isinstance(err, InvalidObject):
        return text  # already "Route "web" is invalid: field: ..."
    label = _label(data)
    kind = data.get("kind") if isinstance(data, dict) else None
    if label and isinstance(kind, str) and text.startswith(f"{kind}: "):
        text = text[len(kind) + 2 :]
    return f"{label}{text}"


def decode_documents(
    docs: list[Document], namespace: str | None, *, validate: bool = True, may_exist: bool = False
) -> list[Resource]:
    """Every document decoded; the first bad one raises before anything is used."""
    if not docs:
        raise InvalidInput("no objects passed: the manifests contain no documents")
    return [decode_document(d, namespace, validate=validate, may_exist=may_exist) for d in docs]
