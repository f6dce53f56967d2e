"""An Ingress as a user applies it: ``shiftnet apply`` on a running ``shiftnet up``, then curl.

The Ingress is served through the router on its host and path, an Exact path
gets no Route (and an Event on the Ingress naming it), ``get ingress`` shows the router
that admitted it, and deleting the Ingress takes its Route off the router.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest
from tests.e2e.test_up import (
    REPO,
    SHIFTNET,
    UpProcess,
    through_router,
)
from tests.support.leftovers import stop_up
from tests.support.ports import free_cluster_network
from tests.support.tls import TestCA

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

APP = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web}
  annotations: {shiftnet.io/workdir: "."}
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: web
      command: ["python3", "podserver.py"]
      ports: [{name: web, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: web}]
"""

INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: store, namespace: shop}
spec:
  rules:
    - host: store.shop.example.com
      http:
        paths:
          - path: /cart
            pathType: Prefix
            backend: {service: {name: web, port: {number: 80}}}
          - path: /exact
            pathType: Exact
            backend: {service: {name: web, port: {number: 80}}}
"""


def status_of(port: str, host: str, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=5)
    try:
        conn.request("GET", path, headers={"Host": host})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def secure_docs(pair_cert: str, pair_key: str) -> str:
    """A kubernetes.io/tls Secret and an Ingress whose TLS section names it (JSON is YAML)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "secure-tls", "namespace": "shop"},
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": pair_cert, "tls.key": pair_key},
    }
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "secure", "namespace": "shop"},
        "spec": {
            "tls": [{"hosts": ["secure.shop.example.com"], "secretName": "secure-tls"}],
            "rules": [
                {
                    "host": "secure.shop.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "web", "port": {"name": "http"}}},
                            }
                        ]
                    },
                }
            ],
        },
    }
    return json.dumps(secret) + "\n---\n" + json.dumps(ingress) + "\n"


def over_tls(port: str, host: str, ca_pem: str) -> tuple[bytes, int, str]:
    """(SHA-256 of the certificate presented for ``host`` by SNI, status, body) of GET /."""
    context = ssl.create_default_context(cadata=ca_pem)
    request = f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    with (
        socket.create_connection(("127.0.0.1", int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as tls,
    ):
        der = tls.getpeercert(binary_form=True) or b""
        tls.sendall(request)
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    head, _, body = answer.decode(errors="replace").partition("\r\n\r\n")
    return hashlib.sha256(der).digest(), int(head.split()[1]), body


def wait_for(check, timeout: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout}s; last value: {value!r}")
        time.sleep(0.2)


def test_an_applied_ingress_is_served_through_the_router_and_removed_with_it(
    up_env: tuple[Path, dict[str, str]],
    tmp_path: Path,
) -> None:
    state, env = up_env
    env = dict(env, ROUTER_CANONICAL_HOSTNAME="router-default.apps.shop.test")
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(REPO / "examples" / "demo" / "podserver.py", app)
    (app / "app.yaml").write_text(APP)
    (tmp_path / "ingress.yaml").write_text(INGRESS)
    net = free_cluster_network()  # apart from other clusters' pods

    def shiftnet(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SHIFTNET), *args], env=env, capture_output=True, text=True, timeout=30
        )

    up = UpProcess(
        ["up", "-f", str(app), "--node-name", "e2e-ing", "--cluster-network", net],
        cwd=tmp_path,
        env=env,
    )
    try:
        up.read_until(r"Press Ctrl-C", timeout=120)
        http_port = env["ROUTER_SERVICE_HTTP_PORT"]
        made = shiftnet("apply", "-f", str(tmp_path / "ingress.yaml"))
        assert made.returncode == 0, made.stderr
        assert made.stdout.strip() == "ingress.networking.k8s.io/store created", made.stdout

        body = through_router(http_port, "store.shop.example.com", "/cart/items")
        assert "pod=web-1 ns=shop" in body and "path=/cart/items" in body, body
        assert status_of(http_port, "store.shop.example.com", "/exact") == 503

        routes = shiftnet("get", "routes", "-n", "shop", "-o", "name")
        names = routes.stdout.split()
        assert len(names) == 1 and re.fullmatch(
            r"route\.route\.openshift\.io/store-\w{5}", names[0]
        )
        # ADDRESS: the canonical name of the router that admitted the route
        wait_for(
            lambda: re.search(
                r"^store\s+<none>\s+store\.shop\.example\.com\s+router-default\.apps\.shop\.test"
                r"\s+80\s",
                shiftnet("get", "ingress", "-n", "shop").stdout,
                re.M,
            )
        )

        # spec.tls with a kubernetes.io/tls Secret: an edge route presenting its certificate
        ca = TestCA()
        pair = ca.issue("secure.shop.example.com")
        (tmp_path / "secure.yaml").write_text(secure_docs(pair.cert_pem, pair.key_pem))
        made = shiftnet("apply", "-f", str(tmp_path / "secure.yaml"))
        assert made.returncode == 0, made.stderr
        https_port = env["ROUTER_SERVICE_HTTPS_PORT"]

        def served_over_tls() -> tuple[bytes, int, str] | None:
            try:
                got = over_tls(https_port, "secure.shop.example.com", ca.cert_pem)
            except (OSError, ssl.SSLError):
                return None
            return got if got[1] == 200 else None

        fingerprint, _, body = wait_for(served_over_tls)
        assert fingerprint == pair.fingerprint
        assert "pod=web-1 ns=shop" in body, body
        # plain HTTP to that host is redirected, as the generated route says
        assert status_of(http_port, "secure.shop.example.com", "/") == 302

        described = shiftnet("describe", "ingress", "store", "-n", "shop").stdout
        assert f"{names[0].split('/')[1]}  store.shop.example.com/cart  admitted by" in described
        # the Exact path: OpenShift's Event on the Ingress, shown by describe
        event = re.compile(
            r"^\s+Normal\s+IncompleteIngressToRouteRules\s+.*\s+master\s+"
            r"Incomplete ingress to route rules detected: "
            r"Unsupported exact path type in rule at index 0, path index 1$",
            re.M,
        )
        wait_for(
            lambda: event.search(shiftnet("describe", "ingress", "store", "-n", "shop").stdout),
            timeout=10,
        )

        gone = shiftnet("delete", "ingress", "store", "-n", "shop")
        assert gone.returncode == 0, gone.stderr
        wait_for(
            lambda: len(shiftnet("get", "routes", "-n", "shop", "-o", "name").stdout.split()) == 1
        )
        wait_for(lambda: status_of(http_port, "store.shop.example.com", "/cart/items") == 503)

        os.killpg(up.proc.pid, signal.SIGINT)
        code = up.proc.wait(timeout=60)
        tail = up.rest()
        assert code == 0, tail
        log = "\n".join(up.lines) + tail
        assert "reason=IncompleteIngressToRouteRules" in log, log
        assert "Unsupported exact path type in rule at index 0, path index 1" in log
    finally:
        stop_up(up.proc, state)  # and its pods and HAProxy (own sessions), by pid
