"""The controller's services grouped by role: what ``Controller`` (``controller/registry.py``) holds.

Each role is a handful of services that the code uses together. ``Controller`` builds them in
dependency order, which crosses roles (identities need auth policies, routers need configs), so a
role is a typed namespace that the registry fills member by member; once ``Controller`` is built,
every member a role declares is set (``tests/unit/test_manager_registry.py`` checks it).

Handlers and mappers bind these members by name (``controller/api/wiring.py``): the members of
every role, and the few values ``Controller.BINDABLE`` names. The store, the core and the
cascades are nobody's to bind: a handler reaches records through a manager.
"""

from __future__ import annotations

from typing import Any, Callable

from controller.auth.ext_jwt import ExtJwtMethod, ExtJwtSecondary, ExtJwtVerifier
from controller.auth.factors import SecondaryFactors
from controller.auth.methods import Authenticator
from controller.auth.session_tokens import SessionTokens
from controller.enroll.registry import EnrollmentMethods
from controller.fabric.state import Fabric
from controller.model.api_session import ApiSessionManager
from controller.model.api_session_certificate import ApiSessionCertificateManager
from controller.model.auth_policy import AuthPolicyManager
from controller.model.authenticator import AuthenticatorManager
from controller.model.authenticator_lifecycle import CertLifecycle
from controller.model.ca import CaManager
from controller.model.config import ConfigManager
from controller.model.config_type import ConfigTypeManager
from controller.model.enrollment import EnrollmentManager
from controller.model.external_jwt_signer import ExternalJwtSignerManager
from controller.model.identity import IdentityManager
from controller.model.identity_type import IdentityTypeManager
from controller.model.mfa import MfaManager
from controller.model.network import Network, ServiceUpdateMarkers
from controller.model.policies import EdgeRouterPolicyManager, ServiceEdgeRouterPolicyManager, ServicePolicyManager
from controller.model.posture_check import PostureCheckManager, PostureCheckTypeManager
from controller.model.posture_data import PostureData
from controller.model.revocation import RevocationManager
from controller.model.router import EdgeRouterManager, RouterManager, TransitRouterManager, Tunnelers
from controller.model.router_presence import RouterPresence
from controller.model.service import ServiceManager
from controller.model.service_access import ServiceAccess
from controller.model.service_config import ServiceConfigs
from controller.model.session import SessionManager
from controller.model.settings import ControllerSettingManager
from controller.model.terminator import TerminatorManager
from controller.oidc.service import Oidc
from controller.ops.database import Database
from controller.ops.integrity import Integrity
from controller.ops.requests import RequestGuard
from controller.ops.trace import TraceManager
from controller.policy.engine import PolicyEngine
from controller.policy.sync import PolicySync, ServiceUpdates
from controller.simulation import FaultInjector, RouterFaults


class Role:
    """A group of services; its annotations are its members."""

    def members(self) -> dict[str, Any]:
        """Each member's name and service, in declaration order."""
        return {name: getattr(self, name) for name in type(self).__annotations__}

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {', '.join(type(self).__annotations__)}>"


class Derived(Role):
    """State derived from the store and never persisted: the policy engine and what follows it."""

    #: feeds each commit into the engine (and rebuilds it for the integrity fix)
    policy: PolicySync
    engine: PolicyEngine
    #: the policy relations as the API lists them (``/identities/{id}/services`` and the like)
    network: Network
    #: each identity's services ``lastChangeAt``
    service_updates: ServiceUpdates
    #: bumps ``lastChangeAt`` when the data of a service (not the policies) changes
    service_update_markers: ServiceUpdateMarkers
    #: an ``@id`` role entry leaves every policy when its entity goes
    forget_in_policies: Callable[[str, str], None]


class Accounts(Role):
    """Who is who: identities, their authenticators and sessions, and the policies on signing in."""

    identity_types: IdentityTypeManager
    auth_policies: AuthPolicyManager
    identities: IdentityManager
    authenticators: AuthenticatorManager
    api_sessions: ApiSessionManager
    api_session_certificates: ApiSessionCertificateManager
    mfas: MfaManager
    external_jwt_signers: ExternalJwtSignerManager
    revocations: RevocationManager


class Logins(Role):
    """How a request proves who it is: primary methods, secondary factors, tokens, OIDC."""

    #: ``/authenticate`` with the primary methods (``controller/auth/primary.py``)
    auth: Authenticator
    factors: SecondaryFactors
    ext_jwt: ExtJwtVerifier
    ext_jwt_secondary: ExtJwtSecondary
    #: the ext-jwt primary method, which also checks a bearer token per request
    ext_jwt_primary: ExtJwtMethod
    #: every request's credentials, resolved
    session_tokens: SessionTokens
    oidc: Oidc | None


class Enrollment(Role):
    """Enrollments and the certificates they lead to (the PKI itself is ``Controller.pki``)."""

    enrollments: EnrollmentManager
    #: the enrollment methods (``controller/enroll/``)
    enroll_methods: EnrollmentMethods
    cas: CaManager
    cert_lifecycle: CertLifecycle


class Access(Role):
    """What an identity may reach: services, their configs, policies, posture and sessions."""

    config_types: ConfigTypeManager
    configs: ConfigManager
    services: ServiceManager
    service_configs: ServiceConfigs
    service_policies: ServicePolicyManager
    edge_router_policies: EdgeRouterPolicyManager
    service_edge_router_policies: ServiceEdgeRouterPolicyManager
    posture_checks: PostureCheckManager
    posture_check_types: PostureCheckTypeManager
    #: the posture each API session reported
    posture: PostureData
    #: the services an identity may dial or bind, with their configs and posture
    service_access: ServiceAccess
    sessions: SessionManager


class Routing(Role):
    """Routers and the fabric between them: records, who is online, links and circuits."""

    routers: RouterManager
    edge_routers: EdgeRouterManager
    transit_routers: TransitRouterManager
    tunnelers: Tunnelers
    terminators: TerminatorManager
    router_presence: RouterPresence
    #: the live links and circuits (memory only)
    fabric: Fabric
    router_faults: RouterFaults


class Operations(Role):
    """Running the controller: its settings, the database's upkeep, traces, request limits, faults."""

    controller_settings: ControllerSettingManager
    database: Database
    integrity: Integrity
    traces: TraceManager
    request_guard: RequestGuard
    #: simulated faults on requests (``ziti-harness``, the simulation API)
    faults: FaultInjector
