"""Where each store resource lives in a Kubernetes API, and what a ``kube://`` URL names.

Pure: the ``kube`` backend asks this table which group, version and scope a
resource (``routes``, ``pods``) has, and whether the kinds are reached
through the core API's typed calls or the generic custom-objects calls. The
table is read from :mod:`shiftnet.api.registry`, so a kind added there is
reachable through the API with no change here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shiftnet.api.registry import KINDS
from shiftnet.errors import ConfigError

SCHEME = "kube://"
DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclass(frozen=True)
class KubeResource:
    """One resource as the API names it: ``routes`` in ``route.openshift.io/v1``."""

    plural: str
    kind: str
    group: str  # "" for the core group
    version: str
    namespaced: bool

    @property
    def core(self) -> bool:
        return not self.group

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``pods``, ``routes.route.openshift.io``: how kubectl and RBAC rules name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def core_name(self) -> str:
        """The kind in the core API's method names: ``pod``, ``endpoints``, ``node``."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.kind).lower()


def _from_kinds() -> dict[str, KubeResource]:
    out: dict[str, KubeResource] = {}
    for k in KINDS:
        group, _, version = k.API_VERSION.rpartition("/")
        out[k.RESOURCE] = KubeResource(k.RESOURCE, k.KIND, group, version, k.NAMESPACED)
    return out


RESOURCES: Mapping[str, KubeResource] = _from_kinds()


def resource_for(plural: str) -> KubeResource:
    """The API coordinates of a store resource, or one sentence saying it has none."""
    found = RESOURCES.get(plural)
    if found is None:
        known = ", ".join(sorted(RESOURCES))
        raise ConfigError(
            f'the kube store cannot hold "{plural}": it is not a kind shiftnet knows ({known})'
        )
    return found


@dataclass(frozen=True)
class KubeTarget:
    """A parsed ``kube://`` URL: which kubeconfig, which context (None: its current one)."""

    kubeconfig: Path
    context: str | None


def parse_kube_url(url: str, env: Mapping[str, str]) -> KubeTarget:
    """``kube:///abs/kubeconfig``, ``kube://rel/kubeconfig``, ``kube://`` ($KUBECONFIG or
    ~/.kube/config), each optionally followed by ``?context=NAME``."""
    if not url.startswith(SCHEME):
        raise ConfigError(f'store URL "{url}" is not a kube:// URL')
    rest = url[len(SCHEME) :]
    context: str | None = None
    if "?" in rest:
        rest, _, query = rest.partition("?")
        key, sep, value = query.partition("=")
        if key != "context" or not sep or not value:
            raise ConfigError(
                f'store URL "{url}": the only option is ?context=NAME (a kubeconfig context)'
            )
        context = value
    if not rest:
        first = (env.get("KUBECONFIG") or "").split(":")[0]
        rest = first or DEFAULT_KUBECONFIG
    return KubeTarget(Path(rest).expanduser(), context)
