"""The API server process part: TLS listener, routes, credentials and kubeconfig on start.

:class:`APIServer` is a library object (``await APIServer(store, config).start()``);
``shiftnet apiserver`` and ``shiftnet up`` both run it.
"""

from __future__ import annotations

import logging
import ssl
from typing import IO, Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from shiftnet.apiserver import selfreviews
from shiftnet.apiserver.audit import audit_middleware, open_log
from shiftnet.apiserver.auth import bearer_auth
from shiftnet.apiserver.config import APIServerConfig
from shiftnet.apiserver.handlers import ResourceAPI, status_middleware
from shiftnet.apiserver.kubeconfig import render_kubeconfig, server_url
from shiftnet.apiserver.metrics import APIServerMetrics
from shiftnet.apiserver.pki import ADMIN_USER, Credentials, ensure_credentials
from shiftnet.apiserver.tokens import TokenTable, read_tokens, token_file
from shiftnet.errors import ConfigError
from shiftnet.private_files import ensure_private_dir, write_private_file
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 1.0  # open watches and log follows are cut, not waited for
# Request line and header field limits: upstream takes 1 MiB of headers in all (a long
# label selector, an OIDC token with many groups); aiohttp's 8 KiB each refused such
# requests. Bounded still, as every connection may hold this much while it is parsed.
MAX_REQUEST_LINE = 256 * 1024
MAX_HEADER_FIELD = 64 * 1024


class OneLineBadRequests(logging.Filter):
    """aiohttp logs a request it cannot parse (a line over the limit, a broken header) as an
    error with a traceback; the client has its 400 already, so one warning line says it
    (the traceback only with ``--debug``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and not log.isEnabledFor(logging.DEBUG):
            record.msg = "refused a request that is not valid HTTP: %s"
            record.args = (" ".join(str(exc.message).split())[:200],)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_ONE_LINE = OneLineBadRequests()


def tls_context(creds: Credentials) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(creds.cert_path), str(creds.key_path))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def build_app(
    store: Store,
    config: APIServerConfig,
    token: str,
    address: str,
    others: TokenTable | None = None,
    audit: IO[str] | None = None,
    metrics: APIServerMetrics | None = None,
) -> web.Application:
    api = ResourceAPI(store, config, address)
    middlewares = [bearer_auth(token, others), status_middleware]
    if audit is not None:  # after authentication: only known clients' requests
        middlewares.insert(1, audit_middleware(audit))
    if metrics is not None:  # outermost: refused requests are counted too
        middlewares.insert(0, metrics.middleware())
    app = web.Application(middlewares=middlewares)
    if metrics is not None:
        metrics.install(app)
    selfreviews.install(app, config.max_body_bytes)  # before the catch-all /apis routes
    app.router.add_get("/version", api.version)
    for path in ("/healthz", "/livez", "/readyz"):
        app.router.add_get(path, api.health)
    app.router.add_get("/openapi/v2", api.openapi_v2)
    app.router.add_get("/openapi/v3", api.openapi_v3_index)
    app.router.add_get("/openapi/v3/{path:.+}", api.openapi_v3)
    # the official clients ask for "/api/" and "/apis/", kubectl for "/api" and "/apis"
    for slash in ("", "/"):
        app.router.add_get("/api" + slash, api.core)
        app.router.add_get("/apis" + slash, api.groups)
    app.router.add_get("/apis/{group}", api.group)
    app.router.add_route("*", "/api/{tail:.+}", api.resource)
    app.router.add_route("*", "/apis/{group}/{tail:.+}", api.resource)

    async def end_watches(_: web.Application) -> None:
        await api.watches.close()

    app.on_cleanup.append(end_watches)
    return app


class APIServer:
    """The Kubernetes API over ``store`` on ``config``'s address, over HTTPS."""

    def __init__(self, store: Store, config: APIServerConfig) -> None:
        self.store = store
        self.config = config
        self.credentials: Credentials | None = None
        self._runner: web.AppRunner | None = None
        self._audit: IO[str] | None = None
        self.metrics = APIServerMetrics()  # kube-apiserver's series (metrics.py)
        self.address: tuple[str, int] = (config.listen_host, config.listen_port)

    @property
    def url(self) -> str:
        return server_url(*self.address)

    async def start(self) -> None:
        cfg = self.config
        ensure_private_dir(cfg.state_dir)
        self.credentials = creds = ensure_credentials(cfg.pki_dir, cfg.listen_host)
        host_port = f"{cfg.listen_host}:{cfg.listen_port}"
        others = TokenTable(read_tokens(token_file(cfg.pki_dir)))
        if cfg.audit_log is not None:
            try:
                self._audit = open_log(cfg.audit_log)
            except OSError as err:
                raise ConfigError(
                    f"the API server cannot write its request log {cfg.audit_log}: "
                    f"{err.strerror or err}"
                ) from None
        app = build_app(self.store, cfg, creds.token, host_port, others, self._audit, self.metrics)
        # handler_cancellation: a watch or log follow whose client went away ends at once,
        # instead of holding its descriptor and store watch until its timeout.
        runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=SHUTDOWN_TIMEOUT,
            handler_cancellation=True,
            max_line_size=MAX_REQUEST_LINE,
            max_field_size=MAX_HEADER_FIELD,
        )
        logging.getLogger("aiohttp.server").addFilter(_ONE_LINE)  # once: filters are a set
        await runner.setup()
        site = web.TCPSite(
            runner, cfg.listen_host, cfg.listen_port, ssl_context=tls_context(creds), backlog=512
        )
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            self._close_audit()
            raise ConfigError(
                f"the API server cannot listen on {host_port}: {err.strerror or err} "
                "(choose another with --api-listen or SHIFTNET_API_LISTEN)"
            ) from None
        self._runner = runner
        server: Any = site._server  # aiohttp keeps the bound sockets here
        if server is not None and server.sockets:
            self.address = (cfg.listen_host, int(server.sockets[0].getsockname()[1]))
        write_private_file(
            cfg.kubeconfig_path,
            render_kubeconfig(self.url, creds.ca_pem, creds.token, ADMIN_USER),
        )
        log.info(
            "API server listening url=%s kubeconfig=%s other_tokens=%d",
            self.url,
            cfg.kubeconfig_path,
            len(others),
        )

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._close_audit()

    def _close_audit(self) -> None:
        if self._audit is not None:
            self._audit.close()
            self._audit = None
