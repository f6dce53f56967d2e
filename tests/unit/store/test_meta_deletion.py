"""A deletion once asked survives an update that does not carry it (generic store metadata)."""

from __future__ import annotations

from shiftnet.store.meta import prepare_update

OLD = {
    "metadata": {
        "name": "web",
        "uid": "u1",
        "deletionTimestamp": "2030-01-01T00:00:30Z",
        "deletionGracePeriodSeconds": 30,
    },
    "spec": {"a": 1},
}


def test_an_update_without_the_marks_keeps_them() -> None:
    out = prepare_update(OLD, {"metadata": {"name": "web"}, "spec": {"a": 1}})
    assert out["metadata"]["deletionTimestamp"] == "2030-01-01T00:00:30Z"
    assert out["metadata"]["deletionGracePeriodSeconds"] == 30


def test_an_update_may_bring_them_shorter() -> None:
    new = {
        "metadata": {
            "name": "web",
            "deletionTimestamp": "2030-01-01T00:00:05Z",
            "deletionGracePeriodSeconds": 5,
        }
    }
    out = prepare_update(OLD, new)
    assert out["metadata"]["deletionTimestamp"] == "2030-01-01T00:00:05Z"
    assert out["metadata"]["deletionGracePeriodSeconds"] == 5


def test_objects_never_deleted_get_no_marks() -> None:
    out = prepare_update({"metadata": {"name": "web", "uid": "u1"}}, {"metadata": {"name": "web"}})
    assert "deletionTimestamp" not in out["metadata"]
    assert "deletionGracePeriodSeconds" not in out["metadata"]
