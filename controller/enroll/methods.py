"""The enrollment registry every controller starts with: one method per file."""

from __future__ import annotations

from controller.enroll.ca import CaMethod
from controller.enroll.ott import OttMethod
from controller.enroll.ottca import OttCaMethod
from controller.enroll.registry import EnrollmentMethods, OneTimeTokens
from controller.enroll.router import RouterMethod
from controller.enroll.token import TokenMethod
from controller.enroll.updb import UpdbMethod

#: every enrollment method, in documentation order: adding one is its module and a line here (and below)
METHODS = (OttMethod, OttCaMethod, UpdbMethod, CaMethod, RouterMethod, TokenMethod)
#: every name ``?method=`` accepts (a method may answer to several: ``erott``/``trott``)
METHOD_NAMES = tuple(name for method in METHODS for name in getattr(method, "names", (method.name,)))


def enrollment_methods(
    *,
    store,
    ids,
    pki,
    identities,
    authenticators,
    enrollments,
    cas,
    routers,
    auth_policies,
    external_jwt_signers,
    ext_jwt,
) -> EnrollmentMethods:
    """ott, ottca, updb, ca, erott/trott and token, each given the collaborators it uses."""
    tokens = OneTimeTokens(enrollments=enrollments, identities=identities, store=store)
    return EnrollmentMethods(
        [
            OttMethod(tokens, pki=pki, store=store, authenticators=authenticators),
            OttCaMethod(tokens, cas=cas, store=store, authenticators=authenticators),
            UpdbMethod(tokens, store=store, authenticators=authenticators),
            CaMethod(store=store, ids=ids, cas=cas, identities=identities, authenticators=authenticators),
            RouterMethod(tokens, enrollments=enrollments, routers=routers, pki=pki, store=store),
            TokenMethod(
                ext_jwt,
                signers=external_jwt_signers,
                auth_policies=auth_policies,
                cas=cas,
                identities=identities,
                authenticators=authenticators,
                pki=pki,
                store=store,
                ids=ids,
            ),
        ]
    )
