"""Certificate dates through the whole router and a real HAProxy, as OpenShift decides them.

An expired certificate whose ``caCertificate`` did not sign it is served
(OpenShift's verifier stops at the leaf's dates and tolerates that); a valid
certificate with the same wrong CA is refused, and the other routes go on
being served. The router judges certificates at its own wall clock.
"""

from __future__ import annotations

import datetime as dt

from tests.support.backends import backends
from tests.support.pem import issue
from tests.support.router import RouterEnv, endpoints, namespace, route, service, sha256_of_pem

from shiftnet.router.admission import EXTENDED_VALIDATION_FAILED

CA = issue("dates live CA", ca=True)
OTHER_CA = issue("some other CA", ca=True)
EXPIRED = issue(
    "expired.example.com",
    issuer=CA,
    not_before=dt.datetime(2001, 1, 1, tzinfo=dt.UTC),
    not_after=dt.datetime(2002, 1, 1, tzinfo=dt.UTC),
)
VALID = issue("valid.example.com", issuer=CA)
GOOD = issue("good.example.com", issuer=CA)


def _edge(cert_pem: str, key_pem: str, ca_pem: str) -> dict[str, str]:
    return {"termination": "edge", "certificate": cert_pem, "key": key_pem, "caCertificate": ca_pem}


async def test_an_expired_certificate_with_a_wrong_ca_is_served_a_valid_one_refused(
    router_env: RouterEnv,
) -> None:
    env = router_env
    with backends("pod") as pods:
        await env.apply(namespace("demo"), service("demo", "web"), endpoints("demo", "web", pods))
        await env.apply(
            route(
                "demo",
                "expired",
                "expired.example.com",
                "web",
                tls=_edge(EXPIRED.cert_pem, EXPIRED.key_pem, OTHER_CA.cert_pem),
            ),
            route(
                "demo",
                "valid",
                "valid.example.com",
                "web",
                tls=_edge(VALID.cert_pem, VALID.key_pem, OTHER_CA.cert_pem),
            ),
            route(
                "demo",
                "good",
                "good.example.com",
                "web",
                tls=_edge(GOOD.cert_pem, GOOD.key_pem, CA.cert_pem),
            ),
        )

        async def admitted(name: str) -> bool:
            ing = await env.ingress("demo", name)
            return ing is not None and ing.conditions[0].status == "True"

        await env.eventually(lambda: admitted("expired"))
        await env.eventually(lambda: admitted("good"))
        refused = await env.eventually(lambda: env.ingress("demo", "valid"))
        condition = refused.conditions[0]
        assert condition.status == "False" and condition.reason == EXTENDED_VALIDATION_FAILED
        assert condition.message == (
            'spec.tls.certificate: Invalid value: "redacted certificate data": error verifying '
            "certificate: x509: certificate signed by unknown authority"
        )

        async def presents(host: str, pem: str) -> bool:
            reply = await env.get_tls(host)
            return reply.status == 200 and reply.cert_sha256 == sha256_of_pem(pem)

        await env.eventually(lambda: presents("expired.example.com", EXPIRED.cert_pem))
        await env.eventually(lambda: presents("good.example.com", GOOD.cert_pem))
        # The refused route is not served with its certificate; the others still are.
        not_served = await env.get_tls("valid.example.com")
        assert not_served.cert_sha256 != sha256_of_pem(VALID.cert_pem)
        assert not_served.status != 200 or not_served.backend != "pod"
        assert await presents("expired.example.com", EXPIRED.cert_pem)
        assert await presents("good.example.com", GOOD.cert_pem)
