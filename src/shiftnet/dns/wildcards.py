"""kube-dns wildcard queries: ``*`` as a whole label under ``svc.<zone>``. Pure.

kube-dns (and CoreDNS before 1.9) let ``*`` stand for any one label in the
endpoint, service, namespace, port or protocol position: ``*.shop.svc.<zone>``
is every service of ``shop``, ``web.*.svc.<zone>`` every ``web``,
``*.web.shop.svc.<zone>`` every endpoint of ``web``, ``*.*.web.shop.svc.<zone>``
SRV every port of ``web``. Matching is per label against the names the zone
holds, so a wildcard answer is exactly the union of the records a client could
have asked for one by one. Off unless the operator turns it on.
"""

from __future__ import annotations

from collections.abc import Iterable

WILDCARD = "*"


def is_wildcard_query(key: str, svc_suffix: str) -> bool:
    """Does ``key`` (lowercase, absolute) use ``*`` as a label below ``svc_suffix``?"""
    if not key.endswith(svc_suffix):
        return False
    return WILDCARD in key[: -len(svc_suffix)].split(".")


def matching_owners(key: str, svc_suffix: str, owners: Iterable[str]) -> list[str]:
    """Owner names below ``svc_suffix`` that ``key`` matches label by label, sorted."""
    pattern = key[: -len(svc_suffix)].split(".")[:-1]  # labels left of svc.<zone>
    out = []
    for owner in owners:
        if not owner.endswith(svc_suffix):
            continue
        labels = owner[: -len(svc_suffix)].split(".")[:-1]
        if len(labels) == len(pattern) and all(
            p in (WILDCARD, label) for p, label in zip(pattern, labels, strict=True)
        ):
            out.append(owner)
    return sorted(out)
