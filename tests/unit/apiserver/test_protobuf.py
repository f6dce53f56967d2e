"""Protobuf request bodies: the wire format, Kubernetes' envelope, and the JSON they become.

Bodies are built field by field with the small writer in
``tests/support/protobuf_encoder.py``; ``kubectl_bodies/`` holds bodies kubectl
1.32 really sent (``python -m tests.support.body_recorder DIR`` records them
again).
"""

from __future__ import annotations

import base64
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from tests.support.import_rules import check
from tests.support.protobuf_encoder import (
    BYTES,
    FIXED32,
    FIXED64,
    GROUP_START,
    entry,
    envelope,
    int_or_string,
    key,
    msg,
    num,
    raw,
    text,
    varint,
)

from shiftnet.api import Namespace, Pod, Service
from shiftnet.apiserver.bodies import decode
from shiftnet.apiserver.fieldvalidation import FieldCheck, drop_unknown
from shiftnet.apiserver.protobuf import (
    MAX_VALUES,
    NOT_DECODED,
    UnsupportedProtobuf,
    accepts_only_protobuf,
    decode_object,
)
from shiftnet.apiserver.protoschema import NAMESPACE, POD, SERVICE, Kind, Message
from shiftnet.apiserver.protowire import MalformedProtobuf, read_fields
from shiftnet.apiserver.resources import find
from shiftnet.apiserver.status import StatusError

CAPTURED = Path(__file__).parent / "kubectl_bodies"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def captured(name: str) -> bytes:
    return base64.decodebytes((CAPTURED / f"{name}.b64").read_bytes())


def meta(*parts: bytes) -> bytes:
    return msg(1, *parts)


def doc(api_version: str, kind: str, *parts: bytes) -> dict[str, Any]:
    return decode_object(envelope(api_version, kind, b"".join(parts))).doc


# ---------------------------------------------------------------- the wire


def test_wire_fields_of_every_type_in_order() -> None:
    data = num(1, 150) + key(2, FIXED64) + (7).to_bytes(8, "little")
    data += raw(3, b"abc") + key(4, FIXED32) + (9).to_bytes(4, "little")
    found = [(f.number, f.wire_type, f.value) for f in read_fields(data)]
    assert found == [(1, 0, 150), (2, 1, 7), (3, 2, b"abc"), (4, 5, 9)]
    assert varint(150) == b"\x96\x01"


# ---------------------------------------------------------------- kubectl's own bodies


@pytest.mark.parametrize(
    ("name", "want"),
    [
        (
            "namespace",  # kubectl create namespace shop
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        ),
        (
            "service",  # kubectl create service clusterip web --tcp=80:8080
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "ports": [
                        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}
                    ],
                    "selector": {"app": "web"},
                    "type": "ClusterIP",
                },
            },
        ),
        (
            "pod",  # kubectl debug web --copy-to=web-copy --image=busybox --container=dbg
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web-copy", "namespace": "default"},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "x",
                            "args": ["-m", "x"],
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "env": [{"name": "A", "value": "b"}],
                        },
                        {"name": "dbg", "image": "busybox", "terminationMessagePolicy": "File"},
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                },
            },
        ),
        (
            "delete_options",  # kubectl drain n1 --disable-eviction --grace-period=5
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 5},
        ),
    ],
)
def test_bodies_kubectl_sent_decode_to_their_json(name: str, want: dict[str, Any]) -> None:
    found = decode_object(captured(name))
    assert found.doc == want
    assert found.duplicates == ()


# ---------------------------------------------------------------- shapes


def test_metadata_maps_timestamps_and_the_zero_time() -> None:
    got = doc(
        "v1",
        "Namespace",
        meta(
            text(1, "shop"),
            text(2, ""),  # Go writes every non-pointer field, empty or not
            num(7, 0),
            msg(8, num(1, 1714557600)),
            msg(9),  # the zero Time is written as no bytes: unset
            entry(11, "app", "shop"),
            entry(11, "tier", ""),  # an empty label value is data
            entry(12, "note", "hi"),
            text(14, "f1"),
        ),
        msg(2, text(1, "kubernetes")),
        msg(3, text(1, "")),
    )
    assert got == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "shop",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "shop", "tier": ""},
            "annotations": {"note": "hi"},
            "finalizers": ["f1"],
        },
        "spec": {"finalizers": ["kubernetes"]},
    }


def test_service_ports_int_or_string_affinity_and_zero_values() -> None:
    got = doc(
        "v1",
        "Service",
        meta(text(1, "web")),
        msg(
            2,
            msg(1, text(1, "http"), text(2, "TCP"), num(3, 80), int_or_string(4, "web"), num(5, 0)),
            msg(1, text(1, "m"), num(3, 9100), int_or_string(4, 9101), num(5, 30100)),
            entry(2, "app", "web"),
            text(3, "None"),
            text(4, "NodePort"),
            text(7, "ClientIP"),
            num(13, 0),  # publishNotReadyAddresses false: not set
            msg(14, msg(1, num(1, 0))),  # a pointer: 0 is what the client asked for
            text(17, "SingleStack"),
        ),
    )
    assert got["spec"] == {
        "ports": [
            {"name": "http", "protocol": "TCP", "port": 80, "targetPort": "web"},
            {"name": "m", "port": 9100, "targetPort": 9101, "nodePort": 30100},
        ],
        "selector": {"app": "web"},
        "clusterIP": "None",
        "type": "NodePort",
        "sessionAffinity": "ClientIP",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}},
        "ipFamilyPolicy": "SingleStack",
    }


def test_pod_containers_probes_inline_handlers_and_pointer_zeros() -> None:
    probe = msg(
        10,
        msg(1, msg(2, text(1, "/healthz"), int_or_string(2, "http"), text(4, "HTTP"))),
        num(2, 0),
        num(4, 5),
    )
    container = msg(
        2,
        text(1, "web"),
        text(2, "img"),
        text(3, "python3"),
        text(4, "-m"),
        text(4, ""),  # an empty argument is an argument
        msg(6, text(1, "http"), num(2, 0), num(3, 8080), text(4, "TCP")),
        msg(7, text(1, "A"), text(2, "b")),
        msg(8),  # resources: empty, so not set
        probe,
        msg(11, msg(1, msg(1, text(1, "true")))),
        num(16, 0),
    )
    got = doc(
        "v1",
        "Pod",
        meta(text(1, "p"), text(3, "default")),
        msg(2, container, text(3, "Never"), num(4, 0), num(5, -1), entry(7, "disk", "ssd")),
        msg(3),
    )
    assert got["spec"] == {
        "containers": [
            {
                "name": "web",
                "image": "img",
                "command": ["python3"],
                "args": ["-m", ""],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "b"}],
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                    "periodSeconds": 5,
                },
                "readinessProbe": {"exec": {"command": ["true"]}},
            }
        ],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "activeDeadlineSeconds": -1,
        "nodeSelector": {"disk": "ssd"},
    }
    cleaned, unknown = drop_unknown(Pod, got)
    assert unknown == ["spec.activeDeadlineSeconds"]  # shiftnet's Pod has no such field
    assert Pod.model_validate(cleaned).spec.termination_grace_period_seconds == 0


def test_fields_shiftnet_has_no_model_for_are_named_not_decoded() -> None:
    got = doc(
        "v1",
        "Pod",
        meta(text(1, "p")),
        msg(2, msg(1, text(1, "data")), msg(2, text(1, "c"), msg(9, text(1, "v"))), msg(14)),
    )
    assert got["spec"] == {
        "volumes": [NOT_DECODED],
        "containers": [{"name": "c", "volumeMounts": [NOT_DECODED]}],
    }
    _, unknown = drop_unknown(Pod, got)
    assert sorted(unknown) == ["spec.containers[0].volumeMounts", "spec.volumes"]


def test_resources_tolerations_and_pull_secrets_are_decoded() -> None:
    memory = msg(1, text(1, "memory"), msg(2, text(1, "64Mi")))  # map entry: key, Quantity
    cpu = msg(2, text(1, "cpu"), msg(2, text(1, "100m")))
    toleration = msg(22, text(1, "dedicated"), text(2, "Exists"), text(4, "NoExecute"), num(5, 0))
    got = doc(
        "v1",
        "Pod",
        meta(text(1, "p")),
        msg(2, msg(2, text(1, "c"), msg(8, memory, cpu)), toleration, msg(15, text(1, "reg"))),
    )
    assert got["spec"] == {
        "containers": [
            {"name": "c", "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "100m"}}}
        ],
        "tolerations": [
            {
                "key": "dedicated",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 0,
            }
        ],
        "imagePullSecrets": [{"name": "reg"}],
    }
    _, unknown = drop_unknown(Pod, got)
    assert unknown == []


def test_delete_options_keep_pointer_values() -> None:
    got = doc(
        "meta.k8s.io/v1",
        "DeleteOptions",
        num(1, 0),
        msg(2, text(2, "42")),
        text(5, "All"),
    )
    assert got == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"resourceVersion": "42"},
        "dryRun": ["All"],
    }


# ---------------------------------------------------------------- unknown and duplicate fields


def test_unknown_field_numbers_follow_field_validation() -> None:
    body = envelope("v1", "Service", meta(text(1, "web"), num(99, 1)) + msg(2, text(42, "x")))
    got = decode(body, PROTOBUF)
    _, unknown = drop_unknown(Service, got.doc)
    assert sorted(unknown) == ["metadata.(protobuf field 99)", "spec.(protobuf field 42)"]
    strict = FieldCheck("Strict")
    with pytest.raises(StatusError) as err:
        strict.report(find("", "v1", "services"), unknown)
    assert err.value.code == 400
    assert 'unknown field "spec.(protobuf field 42)"' in err.value.message
    warn = FieldCheck("Warn")
    warn.report(find("", "v1", "services"), unknown)
    assert warn.warnings == sorted(f'unknown field "{u}"' for u in unknown)


def test_fields_given_twice_keep_the_last_and_are_reported() -> None:
    body = envelope(
        "v1",
        "Namespace",
        meta(
            text(1, "a"),
            text(1, "b"),
            text(3, ""),  # an empty first value is still a first value
            text(3, "x"),
            entry(11, "app", "x"),
            entry(11, "app", "y"),
        ),
    )
    got = decode(body, PROTOBUF)
    assert got.doc["metadata"] == {"name": "b", "namespace": "x", "labels": {"app": "y"}}
    assert got.duplicates == ("metadata.name", "metadata.namespace", "metadata.labels.app")


# ---------------------------------------------------------------- bad bodies


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"kind": "Namespace"}', "does not begin with Kubernetes' protobuf prefix"),
        (b"k8s\x00" + b"\x0a\x80", "runs past the end"),
        (b"k8s\x00" + key(1, BYTES) + varint(50) + b"short", "claims 50 bytes; 5 are left"),
        (b"k8s\x00" + key(1, GROUP_START), "has wire type 3"),
        (b"k8s\x00" + key(0, BYTES) + varint(0), "field number 0"),
        (b"k8s\x00" + b"\xff" * 11, "longer than 10 bytes"),
        (envelope("v1", "Namespace", meta(num(1, 7))), "metadata.name has wire type varint"),
        (
            envelope("v1", "Namespace", meta(raw(1, b"\xff\xfe"))),
            "metadata.name is not valid UTF-8",
        ),
        (
            envelope("v1", "Service", msg(2, msg(1, raw(3, b"80")))),
            "spec.ports[0].port has wire type bytes, not varint",
        ),
        (
            envelope("v1", "Namespace", meta(msg(11, text(1, "a"), text(3, "b")))),
            "an entry of metadata.labels has field 3",
        ),
        (
            envelope("v1", "Namespace", meta(msg(8, num(1, 10**15)))),
            "metadata.creationTimestamp is out of range",
        ),
        (
            envelope("v1", "Service", msg(2, msg(1, b"\x18"))),
            "in spec.ports[0] (ServicePort): a varint at byte 1 runs past the end",
        ),
    ],
)
def test_malformed_bodies_are_one_400_naming_where(body: bytes, reason: str) -> None:
    with pytest.raises(MalformedProtobuf, match=re.escape(reason)):
        decode_object(body)
    with pytest.raises(StatusError) as err:
        decode(body, PROTOBUF)
    assert err.value.code == 400 and err.value.reason == "BadRequest"
    assert err.value.message.startswith("the request body is not valid protobuf: ")
    assert "\n" not in err.value.message


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            envelope("v1", "Endpoints", meta(text(1, "e"))),
            "protobuf bodies are read for DeleteOptions, Ingress, Namespace, Pod, Secret, "
            "SelfSubjectAccessReview, SelfSubjectReview, SelfSubjectRulesReview and Service; "
            "send Endpoints (v1) as JSON or YAML",
        ),
        (envelope("", "", b""), "send an object without a kind as JSON or YAML"),
        (envelope("v1", "Namespace", b"", encoding="gzip"), 'contentEncoding "gzip"'),
        (
            envelope("v1", "Pod", msg(3, msg(8, text(1, "c")))),
            "status.containerStatuses is not read from protobuf bodies",
        ),
    ],
)
def test_kinds_and_fields_without_a_table_are_415(body: bytes, reason: str) -> None:
    with pytest.raises(UnsupportedProtobuf, match=re.escape(reason)):
        decode_object(body)
    with pytest.raises(StatusError) as err:
        decode(body, PROTOBUF)
    assert (err.value.code, err.value.reason) == (415, "UnsupportedMediaType")


def test_a_body_of_too_many_fields_is_refused() -> None:
    body = envelope("v1", "Namespace", msg(2, text(1, "") * MAX_VALUES))
    with pytest.raises(MalformedProtobuf, match=f"more than {MAX_VALUES} values"):
        decode_object(body)


# ---------------------------------------------------------------- Accept


@pytest.mark.parametrize(
    ("accept", "only"),
    [
        (PROTOBUF, True),
        (f"{PROTOBUF};as=Table;g=meta.k8s.io;v=v1", True),
        (f"{PROTOBUF},application/json", False),  # what kubectl sends
        (f"{PROTOBUF}, */*", False),
        ("application/json", False),
        ("", False),
    ],
)
def test_only_a_client_that_takes_nothing_but_protobuf_is_refused(accept: str, only: bool) -> None:
    assert accepts_only_protobuf(accept) is only


# ---------------------------------------------------------------- the tables against the models


def _sub_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _sub_model(arg)
            if found is not None:
                return found
    return None


def _compare(message: Message, model: type[BaseModel], path: str, problems: list[str]) -> None:
    by_name = {}
    for spec in message.fields.values():
        if spec.inline and spec.message is not None:
            by_name.update({f.name: f for f in spec.message.fields.values()})
        else:
            by_name[spec.name] = spec
    for name, info in model.model_fields.items():
        wire = info.alias or name
        if wire in ("apiVersion", "kind"):
            continue
        spec = by_name.get(wire)
        if spec is None or spec.kind in (Kind.OPAQUE, Kind.UNREAD):
            problems.append(f"{path}{wire}: in the model, not decoded from protobuf")
            continue
        sub = _sub_model(info.annotation)
        if spec.message is not None and sub is not None:
            _compare(spec.message, sub, f"{path}{wire}.", problems)


@pytest.mark.parametrize(
    ("message", "model"), [(NAMESPACE, Namespace), (SERVICE, Service), (POD, Pod)]
)
def test_every_model_field_is_decoded_and_no_decoded_field_is_opaque(
    message: Message, model: type[BaseModel]
) -> None:
    problems: list[str] = []
    _compare(message, model, "", problems)
    # containerStatuses are written by node agents (JSON) and refused in protobuf.
    assert problems == (
        ["status.containerStatuses: in the model, not decoded from protobuf"]
        if model is Pod
        else []
    )


def test_the_decoder_modules_do_no_io() -> None:
    src = Path(__file__).resolve().parents[3] / "src"
    pure = [f"shiftnet.apiserver.{m}" for m in ("protowire", "protoschema", "protobuf")]
    io = ["asyncio", "socket", "subprocess", "aiohttp", "httpx", "shiftnet.client"]
    io += ["shiftnet.store", "shiftnet.informer"]
    found = check(src, "shiftnet", pure, io)
    assert [v for v in found if v.rule == "pure-imports-io"] == []


def test_a_secret_body_gives_its_binary_data_as_base64_as_json_has_it() -> None:
    """``kubectl create secret``: ``data`` is map<string, bytes>, any byte allowed."""
    binary = b"\x00\xff\xfe-not-utf8"
    got = doc(
        "v1",
        "Secret",
        meta(text(1, "web-tls")),
        msg(2, text(1, "tls.key"), raw(2, binary)),
        entry(4, "note", "plain"),
        text(3, "kubernetes.io/tls"),
        num(5, 1),
    )
    assert got == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "web-tls"},
        "data": {"tls.key": base64.b64encode(binary).decode()},
        "stringData": {"note": "plain"},
        "type": "kubernetes.io/tls",
        "immutable": True,
    }
