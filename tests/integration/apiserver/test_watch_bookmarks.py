"""Watch bookmarks and a watch from a revision the store has not reached, against a
real ``shiftnet apiserver`` whose bookmark interval is a second."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.apiserver import APIServerProcess

pytestmark = pytest.mark.integration

ROUTES = "/apis/route.openshift.io/v1/namespaces/default/routes"


def route(name: str, host: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name},
        "spec": {"host": host or f"{name}.example.com", "to": {"kind": "Service", "name": "s"}},
    }


@pytest.fixture
def api(tmp_path: Path) -> Iterator[APIServerProcess]:
    server = APIServerProcess(home=tmp_path / "home", extra_args=("--watch-bookmark-interval", "1"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def client(api: APIServerProcess) -> httpx.Client:
    ctx = ssl.create_default_context(cafile=api.ca)
    headers = {"Authorization": f"Bearer {api.token}"}
    return httpx.Client(base_url=api.url, verify=ctx, timeout=30, headers=headers)


class Watch(threading.Thread):
    """One watch read on its own thread: each event with the monotonic time it came."""

    def __init__(self, api: APIServerProcess, params: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.api, self.params = api, params
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.opened = threading.Event()
        self.status = 0

    def run(self) -> None:
        with (
            client(self.api) as http,
            http.stream("GET", ROUTES, params={"watch": "true", **self.params}) as res,
        ):
            self.status = res.status_code
            self.opened.set()
            for line in res.iter_lines():
                if line:
                    self.events.append((time.monotonic(), json.loads(line)))

    def begin(self) -> Watch:
        self.start()
        assert self.opened.wait(15), "the watch did not answer"
        assert self.status == 200
        return self

    def finish(self) -> list[dict[str, Any]]:
        self.join(20)
        assert not self.is_alive(), "timeoutSeconds did not end the watch"
        return [ev for _, ev in self.events]


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_bookmarks_carry_the_current_revision_and_only_when_asked(api: APIServerProcess) -> None:
    with client(api) as http:
        http.post(ROUTES, json=route("a")).raise_for_status()
        http.post(ROUTES, json=route("b")).raise_for_status()
        listed = rv(http.get(ROUTES).json())
        asked = Watch(api, {"allowWatchBookmarks": "true", "timeoutSeconds": "4"}).begin()
        quiet = Watch(api, {"timeoutSeconds": "4"}).begin()
        time.sleep(1.6)  # a bookmark interval with nothing to send
        changed = http.put(
            f"{ROUTES}/a",
            json=http.get(f"{ROUTES}/a").json() | {"spec": route("a", "x.example.com")["spec"]},
        )
        changed.raise_for_status()
        modified = rv(changed.json())
    events = asked.finish()
    marks = [ev["object"] for ev in events if ev["type"] == "BOOKMARK"]
    assert [ev["type"] for ev in events if ev["type"] != "BOOKMARK"] == [
        "ADDED",
        "ADDED",
        "MODIFIED",
    ]
    assert len(marks) >= 2, events
    # upstream's shape: the kind, and of the object only metadata.resourceVersion
    for mark in marks:
        assert set(mark) == {"kind", "apiVersion", "metadata"}, mark
        assert (mark["kind"], mark["apiVersion"]) == ("Route", "route.openshift.io/v1")
        assert set(mark["metadata"]) == {"resourceVersion"}, mark
    assert rv(marks[0]) == listed  # the revision the watch is at before the change
    assert rv(marks[-1]) == modified  # and after it
    plain = quiet.finish()
    assert [ev["type"] for ev in plain] == ["ADDED", "ADDED", "MODIFIED"], plain


def test_a_watch_from_a_revision_not_reached_yet_waits_for_the_changes_after_it(
    api: APIServerProcess,
) -> None:
    """kube-apiserver accepts such a watch and sends what comes after that revision
    (it answers 'Too large resource version' only to a watch with sendInitialEvents,
    which shiftnet does not serve); a bookmark never names a revision the store has
    not reached."""
    with client(api) as http:
        http.post(ROUTES, json=route("a")).raise_for_status()
        head = rv(http.get(ROUTES).json())
        future = Watch(
            api,
            {
                "resourceVersion": str(head + 2),
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "5",
            },
        ).begin()
        time.sleep(1.6)  # a bookmark interval while the store is behind the watch
        writes_began = time.monotonic()
        for name in ("f1", "f2", "f3"):
            http.post(ROUTES, json=route(name)).raise_for_status()
    events = future.finish()
    changes = [(ev["type"], ev["object"]["metadata"].get("name")) for _, ev in future.events]
    assert [c for c in changes if c[0] != "BOOKMARK"] == [("ADDED", "f3")], events
    early = [ev for at, ev in future.events if ev["type"] == "BOOKMARK" and at < writes_began]
    assert early == [], f"bookmark ahead of the store (at {head}): {early}"
    assert all(rv(ev["object"]) >= head + 2 for ev in events), events
