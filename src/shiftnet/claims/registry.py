"""The registry of this user's clusters and what each one claims, shared under a lock.

One directory (``$SHIFTNET_CLUSTERS_DIR``, else
``$XDG_STATE_HOME/shiftnet/clusters``, else ``~/.local/state/shiftnet/clusters``)
holds one JSON file per cluster, named by a hash of its state directory, with
that directory's path and its claims. Every change happens under an
exclusive ``flock`` of ``.lock`` in that directory, so two ``shiftnet up``
starting at the same moment see each other's choice. The kernel drops the
lock when a process dies, so a crash never leaves the registry locked.

A claim lasts as long as its cluster's state directory holds its record
(``claims.json``): a stopped or crashed cluster keeps its ranges and ports for
its next start, and deleting the state directory (as ``kind delete cluster``
does) frees them; the next start of any cluster drops that entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from shiftnet.claims.picking import Claims, OtherCluster
from shiftnet.errors import ConfigError
from shiftnet.private_files import ensure_private_dir, write_private_file

log = logging.getLogger(__name__)

RECORD_NAME = "claims.json"  # in each cluster's state directory
LOCK_NAME = ".lock"


def registry_dir(environ: Mapping[str, str]) -> Path:
    if environ.get("SHIFTNET_CLUSTERS_DIR"):
        return Path(environ["SHIFTNET_CLUSTERS_DIR"]).expanduser().absolute()
    state_home = environ.get("XDG_STATE_HOME") or str(Path("~/.local/state").expanduser())
    return Path(state_home) / "shiftnet" / "clusters"


def read_record(path: Path) -> Claims | None:
    """A claims file; None when absent, ConfigError naming the file when unreadable."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ConfigError(f"claims record {path} cannot be read: {err.strerror}") from None
    try:
        return Claims.from_json(json.loads(text))
    except (ValueError, ConfigError) as err:
        raise ConfigError(
            f"claims record {path} is not valid ({err}): delete it to let shiftnet choose again"
        ) from None


def _alive(state_dir: Path) -> bool:
    """Whether a registered cluster still exists: its state directory holds its record."""
    try:
        os.stat(state_dir / RECORD_NAME)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True  # cannot look (permissions): keep the claim, the safe side
    return True


class Registry:
    """The registry directory, opened under its lock (use :func:`locked_registry`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def entry_path(self, state_dir: Path) -> Path:
        digest = hashlib.sha256(str(state_dir).encode()).hexdigest()[:16]
        return self.directory / f"{digest}.json"

    def others(self, state_dir: Path) -> list[OtherCluster]:
        """Every other live cluster's claims; entries of deleted clusters are removed."""
        found = []
        for entry in sorted(self.directory.glob("*.json")):
            try:
                data = json.loads(entry.read_text())
                their_dir = Path(str(data["stateDir"]))
                claims = Claims.from_json(data["claims"])
            except (OSError, ValueError, KeyError, TypeError, ConfigError) as err:
                log.warning("claims registry entry ignored path=%s error=%s", entry, err)
                continue
            if their_dir == state_dir:
                continue
            if not _alive(their_dir):
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()
                log.info("claims of a deleted cluster dropped state_dir=%s", their_dir)
                continue
            found.append(OtherCluster(str(their_dir), claims))
        return found

    def save(self, state_dir: Path, claims: Claims) -> None:
        """Record ``claims`` in the state directory first, then in the registry."""
        body = json.dumps(claims.to_json(), indent=2, sort_keys=True) + "\n"
        write_private_file(state_dir / RECORD_NAME, body)
        entry = {"stateDir": str(state_dir), "claims": claims.to_json()}
        write_private_file(self.entry_path(state_dir), json.dumps(entry, sort_keys=True) + "\n")


@contextlib.contextmanager
def locked_registry(directory: Path) -> Iterator[Registry]:
    """The registry, held exclusively until the block ends (blocks while another holds it)."""
    ensure_private_dir(directory)
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    lock: IO[bytes] = os.fdopen(fd, "r+b")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield Registry(directory)
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
