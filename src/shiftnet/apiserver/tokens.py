"""Bearer tokens besides the admin's: one identity per machine that joins (``tokens.csv``).

Why: a node on another machine must not carry the admin token. Each gets a
token of its own (user ``system:node:<name>``, group ``system:nodes``, as a
kubelet's identity upstream), so one node's credential can be retired alone
and a node's kubeconfig never unlocks another's.

The file has the shape of Kubernetes' static token file
(``--token-auth-file``): ``token,user,uid[,"group1,group2"]`` one a line. It
lives next to the admin token (0600 in the 0700 ``apiserver/`` directory) and
is read when the server starts. Tokens are looked up by their SHA-256, so the
time a lookup takes says nothing about how much of a guess was right.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from shiftnet.errors import ConfigError
from shiftnet.private_files import ensure_private_dir, write_private_file

log = logging.getLogger(__name__)

TOKENS_FILE = "tokens.csv"
NODES_GROUP = "system:nodes"
# what a token or user may hold: no separators of the file, no white space
_FIELD = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,253}$")


@dataclass(frozen=True)
class TokenUser:
    name: str
    uid: str
    groups: tuple[str, ...] = ()


def token_file(pki_dir: Path) -> Path:
    return pki_dir / TOKENS_FILE


def node_user(node: str) -> str:
    """The identity of node ``node``'s processes, as a kubelet's upstream."""
    return f"system:node:{node}"


def read_tokens(path: Path) -> dict[str, TokenUser]:
    """Token → user from ``path``; a missing file holds none."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    out: dict[str, TokenUser] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3 or len(row) > 4:
            raise ConfigError(
                f"token file {path} line {number}: expected token,user,uid[,groups], "
                f"found {len(row)} fields"
            )
        token, user, uid = (field.strip() for field in row[:3])
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) == 4 else ()
        for what, value in (("token", token), ("user", user), ("uid", uid), *_named(groups)):
            if not _FIELD.match(value):
                raise ConfigError(
                    f"token file {path} line {number}: the {what} is empty or holds "
                    "characters other than letters, digits and ._:@/+=-"
                )
        if token in out:
            raise ConfigError(f"token file {path} line {number}: the token is listed twice")
        out[token] = TokenUser(user, uid, groups)
    return out


def _named(groups: tuple[str, ...]) -> list[tuple[str, str]]:
    return [("group", g) for g in groups]


def _render(tokens: Mapping[str, TokenUser]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for token, user in sorted(tokens.items(), key=lambda item: (item[1].name, item[0])):
        row = [token, user.name, user.uid]
        if user.groups:
            row.append(",".join(user.groups))
        writer.writerow(row)
    return buf.getvalue()


def issue_token(pki_dir: Path, user: str, groups: Iterable[str] = ()) -> str:
    """The token of ``user`` in ``pki_dir``'s token file, made and written if it has none.

    The server reads the file when it starts: issue before starting it.
    """
    if not _FIELD.match(user):
        raise ConfigError(
            f'token user "{user[:64]}" is empty or holds characters other than '
            "letters, digits and ._:@/+=-"
        )
    ensure_private_dir(pki_dir)
    path = token_file(pki_dir)
    tokens = read_tokens(path)
    for token, holder in tokens.items():
        if holder.name == user:
            return token
    token = secrets.token_urlsafe(32)
    tokens[token] = TokenUser(user, user, tuple(groups))
    write_private_file(path, _render(tokens))
    log.info("issued an API token user=%s path=%s", user, path)
    return token


class TokenTable:
    """Who a bearer token belongs to, looked up by its SHA-256."""

    def __init__(self, tokens: Mapping[str, TokenUser]) -> None:
        self._by_digest = {_digest(t): user for t, user in tokens.items()}

    def __len__(self) -> int:
        return len(self._by_digest)

    def user(self, token: str) -> TokenUser | None:
        return self._by_digest.get(_digest(token))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
