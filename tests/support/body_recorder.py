"""A loopback HTTP proxy in front of a real API server that keeps every request body.

kubectl's generators encode their objects as protobuf themselves, so the only
honest source of such bodies is kubectl: point it at this proxy (plain HTTP on
a free loopback port), let the proxy pass each request on to the real server,
and read back what kubectl sent. Used by the integration tests to check what
kubectl sends, and by hand to refresh the unit tests' captured bodies::

    python -m tests.support.body_recorder OUT_DIR   # see main()
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

from tests.support.ports import free_port

# Hop-by-hop and connection headers the proxy sets itself.
_DROPPED = {"host", "authorization", "content-length", "transfer-encoding", "connection"}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    content_type: str
    accept: str
    body: bytes


@dataclass
class BodyRecorder:
    """Forwards to ``upstream`` (``https://127.0.0.1:PORT``) with ``token`` and ``ca``;
    runs its own event loop in a thread so synchronous tests can call kubectl."""

    upstream: str
    token: str
    ca: str
    port: int = field(default_factory=free_port)
    requests: list[RecordedRequest] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method in ("POST", "PUT", "PATCH", "DELETE")]

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            RecordedRequest(
                request.method,
                request.path_qs,
                request.headers.get("Content-Type", ""),
                request.headers.get("Accept", ""),
                body,
            )
        )
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED}
        headers["Authorization"] = f"Bearer {self.token}"
        assert self._session is not None
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=body
        ) as upstream:
            payload = await upstream.read()
            out = web.Response(status=upstream.status, body=payload)
            for key, value in upstream.headers.items():
                if key.lower() not in _DROPPED and key.lower() != "content-encoding":
                    out.headers.add(key, value)
            return out

    async def _start(self) -> None:
        context = ssl.create_default_context(cafile=self.ca)
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context))
        app = web.Application(client_max_size=8 << 20)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def start(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), loop).result(timeout=10)

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._loop = None

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig that sends kubectl through the proxy (no credential: the
        proxy adds the upstream's)."""
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: rec\n  cluster: {{server: '{self.url}'}}\n"
            "users:\n- name: rec\n  user: {}\n"
            "contexts:\n- name: rec\n  context: {cluster: rec, user: rec}\n"
            "current-context: rec\n"
        )
        path.chmod(0o600)
        return path


def main(argv: list[str]) -> int:
    """Run kubectl's generators through the proxy against a fresh ``shiftnet
    apiserver`` and write each protobuf body to OUT_DIR as base64 text."""
    import base64
    import subprocess
    import tempfile

    from tests.support.apiserver import KUBECTL, APIServerProcess

    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    # (fixture name, kubectl arguments); kubectl run sends JSON and only sets up the
    # pod that kubectl debug copies (with a typed client: protobuf).
    on_node = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: on-n1, namespace: default}\n"
        "spec: {nodeName: n1, containers: [{name: c, image: x}]}\n"
    )
    drain = ["drain", "n1", "--disable-eviction", "--force", "--grace-period=5", "--timeout=20s"]
    commands: list[tuple[str, list[str], str | None]] = [
        ("namespace", ["create", "namespace", "shop"], None),
        ("service", ["create", "service", "clusterip", "web", "--tcp=80:8080"], None),
        ("", ["run", "web", "--image=x", "--port=8080", "--env=A=b", "--", "-m", "x"], None),
        ("pod", ["debug", "web", "--copy-to=web-copy", "--image=busybox", "--container=dbg"], None),
        ("", ["apply", "-f", "-"], on_node),
        ("delete_options", drain, None),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        api = APIServerProcess(home=Path(tmp) / "home")
        api.start()
        recorder = BodyRecorder(api.url, api.token, api.ca)
        recorder.start()
        try:
            env = api.env() | {"KUBECONFIG": str(recorder.kubeconfig(Path(tmp) / "rec"))}
            for name, args, stdin in commands:
                before = len(recorder.requests)
                subprocess.run(
                    [KUBECTL, *args],
                    input=stdin,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                for req in recorder.requests[before:]:
                    if name and req.body and "protobuf" in req.content_type:
                        text = base64.encodebytes(req.body).decode()
                        (out / f"{name}.b64").write_text(text)
                        print(f"{name}: {len(req.body)} bytes {req.path}")
        finally:
            recorder.stop()
            api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
