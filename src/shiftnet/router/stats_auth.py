"""The stats page's user and password: given, or generated once and kept private.

Why: the stats page lists every ``namespace:route`` backend and every pod
address, so it is never served without a password. As the OpenShift router
does, a router told no ``STATS_USERNAME``/``STATS_PASSWORD`` makes its own
(user ``admin``, a random password), keeps them 0600 in its work directory
(``stats-credentials``, one ``user:password`` line) and reuses them on every
later start, so bookmarks and scrapers keep working. The caller prints the
password once, when it is generated.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from pathlib import Path

from shiftnet.errors import ConfigError
from shiftnet.private_files import tighten_private_file, write_private_file
from shiftnet.router.config import RouterConfig

log = logging.getLogger(__name__)

CREDENTIALS_FILE = "stats-credentials"
DEFAULT_USERNAME = "admin"  # the OpenShift router's default stats user
_PASSWORD_BYTES = 18  # 24 URL-safe characters: no space, ':' or quote to escape


@dataclass(frozen=True)
class StatsCredentials:
    """Who may read the stats page; ``path`` is where generated ones are kept."""

    username: str
    password: str
    path: Path | None = None  # None: given by flag or environment
    generated: bool = False  # made by this start (print the password now, once)


def _read(path: Path) -> StatsCredentials:
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    username, sep, password = text.partition(":")
    bad = not sep or not username or not password or any(c.isspace() for c in text)
    if bad or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ConfigError(
            f"stats credentials file {path} does not hold one user:password line; "
            "remove it to have new ones generated"
        )
    return StatsCredentials(username, password, path)


def stats_credentials(config: RouterConfig, work_dir: Path) -> StatsCredentials | None:
    """The credentials the stats page asks for; None when there is no stats page."""
    if not config.stats_port:
        return None
    if config.stats_username:
        return StatsCredentials(config.stats_username, config.stats_password)
    path = Path(work_dir) / CREDENTIALS_FILE
    if path.exists():
        tighten_private_file(path)
        return _read(path)
    password = secrets.token_urlsafe(_PASSWORD_BYTES)
    write_private_file(path, f"{DEFAULT_USERNAME}:{password}\n")
    log.info("generated stats credentials user=%s path=%s", DEFAULT_USERNAME, path)
    return StatsCredentials(DEFAULT_USERNAME, password, path, generated=True)


def stats_line(creds: StatsCredentials | None, url: str) -> str | None:
    """The line a user reads at start-up: the password itself only when just generated."""
    if creds is None:
        return None
    if creds.path is None:
        return f"router stats: {url} (user {creds.username}, password as configured)"
    if creds.generated:
        return (
            f"router stats: {url} user {creds.username} password {creds.password} "
            f"(generated; kept in {creds.path})"
        )
    return f"router stats: {url} (user {creds.username}, password in {creds.path})"
