"""``metadata.managedFields`` in a protobuf body decode to what JSON carries (a Go client
updating an applied object sends them back)."""

from __future__ import annotations

import pytest
from tests.support.protobuf_encoder import envelope, msg, num, raw, text

from shiftnet.api.core import Namespace
from shiftnet.apiserver.protobuf import decode_object
from shiftnet.apiserver.protowire import MalformedProtobuf


def _entry(fields_json: bytes) -> bytes:
    return msg(
        17,
        text(1, "kubectl"),
        text(2, "Apply"),
        text(3, "v1"),
        msg(4, num(1, 1714557600)),
        text(6, "FieldsV1"),
        msg(7, raw(1, fields_json)),
    )


def test_managed_fields_entries_decode_with_their_json_tree() -> None:
    body = envelope("v1", "Namespace", msg(1, text(1, "shop"), _entry(b'{"f:metadata":{}}')))
    got = decode_object(body).doc
    assert got["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2024-05-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {}},
        }
    ]
    parsed = Namespace.model_validate(got)
    assert parsed.metadata.managed_fields is not None
    assert parsed.metadata.managed_fields[0].fields_v1 == {"f:metadata": {}}


def test_a_fields_tree_that_is_not_json_is_named() -> None:
    body = envelope("v1", "Namespace", msg(1, text(1, "shop"), _entry(b"{nope")))
    with pytest.raises(MalformedProtobuf, match=r"managedFields\[0\]\.fieldsV1 does not hold JSON"):
        decode_object(body)


@pytest.mark.parametrize("depth", [100, 100_000])
def test_a_fields_tree_nested_deeper_than_a_json_body_may_is_named(depth: int) -> None:
    tree = b'{"f:a":' * depth + b"{}" + b"}" * depth
    body = envelope("v1", "Namespace", msg(1, text(1, "shop"), _entry(tree)))
    with pytest.raises(MalformedProtobuf, match=r"fieldsV1 nests deeper than 100 levels"):
        decode_object(body)
