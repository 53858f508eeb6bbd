"""The primary authentication methods, declared once: one module each, listed here.

Each method declares itself in its module (``name``, ``authenticator``, ``login_page``,
``build``); everything else reads this list: the registry, ``/authenticate?method=``,
the authenticator kinds an admin may create and the OIDC login pages. Adding a method
is its module, a line in ``METHODS`` and its tests.
"""

from __future__ import annotations

from controller.auth.cert import CertMethod
from controller.auth.ext_jwt import ExtJwtMethod
from controller.auth.password import PasswordMethod
from controller.auth.request import Collaborators

#: every primary method, in documentation order
METHODS = (PasswordMethod, CertMethod, ExtJwtMethod)
METHOD_NAMES = tuple(method.name for method in METHODS)
#: the authenticator kinds (``updb``, ``cert``): what a method with an authenticator record checks
AUTHENTICATOR_KINDS = tuple(method.authenticator for method in METHODS if method.authenticator)
#: the OIDC login pages, ``/oidc/login/<page>``, and the method each checks: one per method, plus a
#: method's own page where the real controller names it otherwise (``username`` for ``password``)
LOGIN_METHODS = {
    **{method.name: method.name for method in METHODS},
    **{method.login_page: method.name for method in METHODS if method.login_page != method.name},
}
#: the page a method's login redirects to
LOGIN_PAGES = {method.name: method.login_page for method in METHODS}


def primary_methods(*, store, pki, clock, cas, authenticators, identities, external_jwt_signers, ext_jwt) -> list:
    """Every method in ``METHODS``, each built from the collaborators it names."""
    use = Collaborators(
        store=store,
        pki=pki,
        clock=clock,
        cas=cas,
        authenticators=authenticators,
        identities=identities,
        external_jwt_signers=external_jwt_signers,
        ext_jwt=ext_jwt,
    )
    return [method.build(use) for method in METHODS]
