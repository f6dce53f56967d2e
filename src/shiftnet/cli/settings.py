"""Where the cluster lives: the state directory and the store URL, from flags and environment.

Precedence: flag (``--store``, or ``--kubeconfig PATH`` for ``kube://PATH``), then
environment (``SHIFTNET_HOME``, ``SHIFTNET_STORE``),
then the default SQLite file ``$SHIFTNET_HOME/state.db`` with ``SHIFTNET_HOME``
= ``~/.shiftnet`` (URL ``sqlite:///root/.shiftnet/state.db``: ``sqlite://`` +
an absolute path).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shiftnet.errors import ConfigError

DEFAULT_HOME = "~/.shiftnet"


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    store_url: str

    @property
    def store_is_default_sqlite(self) -> bool:
        return self.store_url == sqlite_url(self.state_dir / "state.db")


def sqlite_url(path: Path) -> str:
    """``sqlite://`` + an absolute path: ``/root/.shiftnet/state.db`` gives
    ``sqlite:///root/.shiftnet/state.db`` (the store's own convention)."""
    return f"sqlite://{path}"


def kube_url(kubeconfig: str) -> str:
    """``--kubeconfig PATH`` as a store URL: ``kube://`` + the absolute path."""
    return f"kube://{Path(kubeconfig).expanduser().absolute()}"


def resolve_settings(
    store_flag: str | None,
    state_dir_flag: str | None,
    env: Mapping[str, str],
    kubeconfig_flag: str | None = None,
) -> Settings:
    home = state_dir_flag or env.get("SHIFTNET_HOME") or DEFAULT_HOME
    state_dir = Path(home).expanduser().absolute()
    if kubeconfig_flag:
        if store_flag:
            raise ConfigError(
                "--store and --kubeconfig both name the store: give one "
                "(--kubeconfig PATH is --store kube://PATH)"
            )
        store_flag = kube_url(kubeconfig_flag)
    store = store_flag or env.get("SHIFTNET_STORE") or sqlite_url(state_dir / "state.db")
    return Settings(state_dir=state_dir, store_url=store)
