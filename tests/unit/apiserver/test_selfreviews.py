"""The self reviews (``kubectl auth can-i``/``whoami``): protobuf bodies read, answers built."""

from __future__ import annotations

import pytest
from tests.support.protobuf_encoder import envelope, msg, text

from shiftnet.apiserver.protobuf import decode_object
from shiftnet.apiserver.selfreviews import access_review, rules_review, user_review
from shiftnet.apiserver.status import StatusError
from shiftnet.apiserver.tokens import TokenUser


def test_kubectls_protobuf_access_review_is_read_and_allowed() -> None:
    attributes = text(1, "shop") + text(2, "create") + text(3, "route.openshift.io")
    attributes += text(5, "routes")
    body = msg(2, msg(1, attributes))  # spec.resourceAttributes
    doc = decode_object(envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", body)).doc
    assert doc["spec"] == {
        "resourceAttributes": {
            "namespace": "shop",
            "verb": "create",
            "group": "route.openshift.io",
            "resource": "routes",
        }
    }
    answer = access_review(doc)
    assert answer["status"]["allowed"] is True and answer["spec"] == doc["spec"]
    paths = decode_object(
        envelope(
            "authorization.k8s.io/v1", "SelfSubjectAccessReview", msg(2, msg(2, text(1, "/x")))
        )
    ).doc
    assert access_review(paths)["spec"] == {"nonResourceAttributes": {"path": "/x"}}


@pytest.mark.parametrize(
    "spec",
    [{}, {"resourceAttributes": {}, "nonResourceAttributes": {}}],
    ids=["neither", "both"],
)
def test_an_access_review_names_exactly_one_kind_of_attributes(spec: dict[str, object]) -> None:
    with pytest.raises(StatusError) as err:
        access_review({"spec": spec})
    assert err.value.code == 422 and "spec.resourceAttributes" in err.value.message


def test_rules_and_the_callers_user() -> None:
    rules = rules_review({"kind": "SelfSubjectRulesReview", "spec": {"namespace": "a"}})
    assert rules["status"]["resourceRules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    ]
    node = user_review(TokenUser("system:node:far", "u-1", ("system:nodes",)))
    assert node["status"]["userInfo"] == {
        "username": "system:node:far",
        "uid": "u-1",
        "groups": ["system:nodes", "system:authenticated"],
    }
