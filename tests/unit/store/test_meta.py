"""The generic metadata every backend assigns: uids and the stored copy."""

from __future__ import annotations

import os
import uuid

from shiftnet.store.meta import json_copy, new_uid, prepare_create


def test_uids_are_random_version_4_and_never_repeat() -> None:
    uids = [new_uid() for _ in range(10_000)]  # many batches of the pool
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)


def test_a_forked_child_draws_other_uids_than_its_parent() -> None:
    new_uid()  # the parent's pool is filled and would be inherited
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next uids, through the pipe
        try:
            os.write(write, ",".join(new_uid() for _ in range(4)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split(",")
    os.waitpid(pid, 0)
    parent = [new_uid() for _ in range(4)]
    assert len(child) == 4 and not set(child) & set(parent)


def test_the_stored_copy_shares_nothing_with_the_callers_object() -> None:
    body = {
        "kind": "Route",
        "metadata": {"name": "web", "labels": {"app": "web"}, "resourceVersion": "9"},
        "spec": {"to": {"name": "web", "weight": 100}, "alternateBackends": [{"name": "b"}]},
        "status": {"ingress": []},
    }
    made = prepare_create(body)
    assert made["metadata"]["uid"] and made["metadata"]["generation"] == 1
    assert "resourceVersion" not in made["metadata"]
    assert body["metadata"]["resourceVersion"] == "9" and "uid" not in body["metadata"]
    made["spec"]["to"]["weight"] = 1
    made["spec"]["alternateBackends"][0]["name"] = "c"
    made["metadata"]["labels"]["app"] = "x"
    assert body["spec"] == {
        "to": {"name": "web", "weight": 100},
        "alternateBackends": [{"name": "b"}],
    }
    assert body["metadata"]["labels"] == {"app": "web"}
    assert json_copy(body) == body and json_copy(body) is not body
