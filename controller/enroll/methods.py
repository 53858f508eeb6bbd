"""The enrollment registry every controller starts with: one method per file, listed here.

Each method declares itself in its module (``name``, ``identity_field``, ``summary``,
``route``, ``build``); everything else reads this list: the registry, the ``?method=``
enum, the per-method operations, the identity create body's ``enrollment`` schema and
the enrollments an identity may open. Adding a method is its module, a line in
``METHODS`` and its tests.
"""

from __future__ import annotations

from controller.enroll.ca import CaMethod
from controller.enroll.ott import OttMethod
from controller.enroll.ottca import OttCaMethod
from controller.enroll.registry import FLAG, Collaborators, EnrollmentMethods, OneTimeTokens
from controller.enroll.router import RouterMethod
from controller.enroll.token import TokenMethod
from controller.enroll.updb import UpdbMethod

#: every enrollment method, in documentation order
METHODS = (OttMethod, OttCaMethod, UpdbMethod, CaMethod, RouterMethod, TokenMethod)
#: every name ``?method=`` accepts (a method may answer to several: ``erott``/``trott``)
METHOD_NAMES = tuple(name for method in METHODS for name in getattr(method, "names", (method.name,)))
#: the enrollments an identity's create body may open: method -> the record field its value fills
#: (None: the value is a flag); also every method ``createEnrollment`` takes
IDENTITY_ENROLLMENTS = {
    method.name: (None if method.identity_field == FLAG else method.identity_field)
    for method in METHODS
    if method.identity_field is not None
}


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
    """Every method in ``METHODS``, each built from the collaborators it names."""
    use = Collaborators(
        store=store,
        ids=ids,
        pki=pki,
        identities=identities,
        authenticators=authenticators,
        enrollments=enrollments,
        cas=cas,
        routers=routers,
        auth_policies=auth_policies,
        external_jwt_signers=external_jwt_signers,
        ext_jwt=ext_jwt,
        tokens=OneTimeTokens(enrollments=enrollments, identities=identities, store=store),
    )
    return EnrollmentMethods([method.build(use) for method in METHODS])
