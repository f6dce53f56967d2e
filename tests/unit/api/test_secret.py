"""v1 Secret: stringData folded into data, Kubernetes' field errors, data never shown."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest

from shiftnet.api import Secret, kind_for_name, parse_object
from shiftnet.api.columns import cells, columns_for
from shiftnet.api.secret_validation import secret_errors
from shiftnet.api.validation import errors, update_errors, validate
from shiftnet.cli.describers import describe_secret
from shiftnet.errors import InvalidObject

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def raw(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "web-tls", "namespace": "default"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64("CERT"), "tls.key": b64("KEY")},
    }
    doc.update(over)
    return doc


def secret(**over: Any) -> Secret:
    obj = parse_object(raw(**over))
    assert isinstance(obj, Secret)
    return obj


def messages(obj: Secret) -> list[str]:
    return [str(e) for e in errors(obj)]


def test_the_kind_is_known_by_every_name_kubectl_accepts() -> None:
    assert kind_for_name("secrets") is Secret
    assert kind_for_name("secret") is Secret


def test_string_data_is_folded_into_data_and_wins_over_the_same_key() -> None:
    s = secret(data={"tls.crt": b64("old"), "tls.key": b64("k")}, stringData={"tls.crt": "new"})
    assert s.value("tls.crt") == b"new"
    assert s.value("tls.key") == b"k"
    assert "stringData" not in s.to_dict()
    assert s.to_dict()["data"]["tls.crt"] == b64("new")


def test_an_empty_type_is_opaque() -> None:
    assert secret(type="").type == "Opaque"
    doc = raw()
    del doc["type"]
    assert parse_object(doc).to_dict()["type"] == "Opaque"


def test_a_valid_tls_secret_passes() -> None:
    validate(secret())


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        (
            {"data": {"tls.crt": b64("c")}},
            ["data[tls.key]: Required value"],
        ),
        (
            {"data": {}},
            ["data[tls.crt]: Required value", "data[tls.key]: Required value"],
        ),
        (
            {"type": "Opaque", "data": {"a b": b64("x")}},
            [
                'data[a b]: Invalid value: "a b": a valid config key must consist of '
                "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  "
                "or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ],
        ),
        (
            {"type": "Opaque", "data": {"..x": b64("x")}},
            ["data[..x]: Invalid value: \"..x\": must not start with '..'"],
        ),
        (
            {"type": "Opaque", "data": {"k": "not base64!"}},
            ['data[k]: Invalid value: "<redacted>": must be base64-encoded (standard, padded)'],
        ),
        (
            {"type": "Opaque", "stringData": {"big": "x" * (1024 * 1024 + 1)}},
            ["data: Too long: must have at most 1048576 bytes"],
        ),
    ],
)
def test_kubernetes_field_errors(over: dict[str, Any], expected: list[str]) -> None:
    assert messages(secret(**over)) == expected


def test_exactly_one_mebibyte_is_allowed() -> None:
    big = secret(type="Opaque", data={}, stringData={"big": "x" * (1024 * 1024)})
    assert secret_errors(big) == []


def test_a_secret_value_never_appears_in_an_error() -> None:
    with pytest.raises(InvalidObject) as info:
        validate(secret(type="Opaque", data={"k": "c2VjcmV0!"}))
    assert "c2VjcmV0" not in str(info.value)


def test_update_keeps_the_type_and_honours_immutable() -> None:
    old = secret()
    assert [str(e) for e in update_errors(secret(type="Opaque"), old)] == [
        'type: Invalid value: "Opaque": field is immutable'
    ]
    frozen = secret(immutable=True)
    changed = secret(immutable=True, stringData={"tls.crt": "rotated"})
    assert [str(e) for e in update_errors(changed, frozen)] == [
        "data: Forbidden: field is immutable when `immutable` is set"
    ]
    assert [str(e) for e in update_errors(secret(), frozen)] == [
        "immutable: Forbidden: field is immutable when `immutable` is set"
    ]
    assert update_errors(secret(stringData={"tls.crt": "rotated"}), old) == []


def test_get_shows_type_and_key_count_never_values() -> None:
    s = secret()
    row = cells(columns_for(Secret, wide=True), s, NOW)
    assert row[:3] == ["web-tls", "kubernetes.io/tls", "2"]
    assert not any(b64("CERT") in cell or "CERT" in cell for cell in row)


def test_describe_shows_sizes_in_bytes_never_values() -> None:
    text = "\n".join(describe_secret(secret(stringData={"tls.crt": "0123456789"}), NOW))
    assert "Type:" in text and "kubernetes.io/tls" in text
    assert "tls.crt:  10 bytes" in text or "tls.crt: 10 bytes" in text
    assert "tls.key: 3 bytes" in text
    assert "0123456789" not in text and b64("0123456789") not in text
