"""The controller's typed registry: every service of one controller, built in one place in dependency order."""

from __future__ import annotations

import logging
from functools import partial
from typing import Callable

from controller import errors
from controller.auth.ext_jwt import ExtJwtMethod, ExtJwtSecondary, ExtJwtVerifier
from controller.auth.factors import SecondaryFactors
from controller.auth.methods import Authenticator
from controller.auth.primary import primary_methods
from controller.auth.session_tokens import SessionTokens
from controller.clock import Clock, rfc3339
from controller.cluster.member import Cluster
from controller.config import Config
from controller.enroll.jwt import sign_enrollment_jwt
from controller.enroll.methods import IDENTITY_ENROLLMENTS, enrollment_methods
from controller.enroll.registry import EnrollmentMethods
from controller.entities import ROLE_TARGETS
from controller.events import Events
from controller.fabric.state import Fabric
from controller.ids import Ids
from controller.model.api_session import ApiSessionManager
from controller.model.api_session_certificate import ApiSessionCertificateManager
from controller.model.auth_policy import AuthPolicyManager
from controller.model.authenticator import AuthenticatorManager
from controller.model.authenticator_lifecycle import CertLifecycle
from controller.model.base import Core, EntityManager
from controller.model.ca import CaManager
from controller.model.cascades import Cascades
from controller.model.config import ConfigManager
from controller.model.config_type import ConfigTypeManager
from controller.model.enrollment import EnrollmentManager
from controller.model.external_jwt_signer import ExternalJwtSignerManager
from controller.model.identity import IdentityManager
from controller.model.identity_type import IdentityTypeManager
from controller.model.mfa import MfaManager
from controller.model.network import Network, ServiceUpdateMarkers, forget_in_policies, role_cascade
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
from controller.ops.requests import AuthRateLimiter, RequestGuard
from controller.ops.trace import TraceManager
from controller.pki.ca import ControllerPKI
from controller.pki.loader import load_pki
from controller.policy.engine import PolicyEngine
from controller.policy.sync import PolicySync, ServiceUpdates
from controller.simulation import FaultInjector, RouterFaults
from controller.store.db import Store

log = logging.getLogger(__name__)


class Controller:
    """The typed registry of one controller's services, built in one place in dependency order.

    Each manager's constructor names the few collaborators it uses. Where two need each
    other, the one built first gets a narrow callable reaching the other (marked "cycle").
    """

    config: Config
    store: Store
    clock: Clock
    ids: Ids
    cascades: Cascades
    core: Core
    instance_id: str
    started_at: str
    events: Events
    pki: ControllerPKI
    router_presence: RouterPresence
    fabric: Fabric
    policy: PolicySync
    engine: PolicyEngine
    service_updates: ServiceUpdates
    network: Network
    identity_types: IdentityTypeManager
    auth_policies: AuthPolicyManager
    identities: IdentityManager
    authenticators: AuthenticatorManager
    enrollments: EnrollmentManager
    config_types: ConfigTypeManager
    configs: ConfigManager
    api_sessions: ApiSessionManager
    services: ServiceManager
    service_configs: ServiceConfigs
    service_policies: ServicePolicyManager
    edge_router_policies: EdgeRouterPolicyManager
    service_edge_router_policies: ServiceEdgeRouterPolicyManager
    forget_in_policies: Callable[[str, str], None]
    tunnelers: Tunnelers
    terminators: TerminatorManager
    routers: RouterManager
    edge_routers: EdgeRouterManager
    transit_routers: TransitRouterManager
    posture_checks: PostureCheckManager
    posture_check_types: PostureCheckTypeManager
    posture: PostureData
    service_access: ServiceAccess
    sessions: SessionManager
    service_update_markers: ServiceUpdateMarkers
    cas: CaManager
    api_session_certificates: ApiSessionCertificateManager
    cert_lifecycle: CertLifecycle
    enroll_methods: EnrollmentMethods
    mfas: MfaManager
    external_jwt_signers: ExternalJwtSignerManager
    ext_jwt: ExtJwtVerifier
    ext_jwt_secondary: ExtJwtSecondary
    ext_jwt_primary: ExtJwtMethod
    factors: SecondaryFactors
    auth: Authenticator
    oidc: Oidc | None
    session_tokens: SessionTokens
    controller_settings: ControllerSettingManager
    revocations: RevocationManager
    database: Database
    integrity: Integrity
    traces: TraceManager
    request_guard: RequestGuard
    faults: FaultInjector
    router_faults: RouterFaults
    #: this member's cluster side (``controller.cluster.member.Cluster``); None for a single controller
    cluster: Cluster | None

    def __init__(self, config: Config, store: Store, clock: Clock, ids: Ids):
        self.config, self.store, self.clock, self.ids = config, store, clock, ids
        self.cluster = None  # set by ``create_app`` for a cluster member
        self.cascades = Cascades(store, clock)
        self.core = core = Core(store, clock, ids, self.cascades)
        self.instance_id = config.cluster.instance_id if config.cluster is not None else ids.short()
        self.started_at = rfc3339(clock.now())
        # cycle: traces emit events, and events carry the trace of their identity
        self.events = Events(
            config=config,
            clock=clock,
            ids=ids,
            instance_id=self.instance_id,
            trace_id_of=lambda identity_id: self.traces.trace_id_of(identity_id),
        )
        self.pki = load_pki(config)
        self.router_presence = RouterPresence()
        self.fabric = Fabric()
        self.policy = PolicySync(store)
        self.engine = self.policy.engine
        self.service_updates = ServiceUpdates(clock)
        self.network = Network(store, self.engine)
        self._build_identity_managers(core)
        self._build_network_managers(core)
        self.cas = CaManager(core, identities=self.identities, pki_clock=self.pki.clock)
        self.api_session_certificates = ApiSessionCertificateManager(core, api_sessions=self.api_sessions, pki=self.pki)
        self.cert_lifecycle = CertLifecycle(
            core,
            authenticators=self.authenticators,
            enrollments=self.enrollments,
            cas=self.cas,
            api_sessions=self.api_sessions,
            pki=self.pki,
        )
        self.mfas = MfaManager(
            core,
            identities=self.identities,
            api_sessions=self.api_sessions,
            events=self.events,
            totp_issuer=config.totp_issuer,
        )
        self.external_jwt_signers = ExternalJwtSignerManager(core, identities=self.identities)
        self.ext_jwt = ExtJwtVerifier(signers=self.external_jwt_signers, clock=clock)
        self.ext_jwt_secondary = ExtJwtSecondary(self.ext_jwt, signers=self.external_jwt_signers)
        self.enroll_methods = enrollment_methods(
            store=store,
            ids=ids,
            pki=self.pki,
            identities=self.identities,
            authenticators=self.authenticators,
            enrollments=self.enrollments,
            cas=self.cas,
            routers=self.routers,
            auth_policies=self.auth_policies,
            external_jwt_signers=self.external_jwt_signers,
            ext_jwt=self.ext_jwt,
        )
        self.factors = SecondaryFactors(self.identities, self.mfas, self.ext_jwt_secondary)
        methods = primary_methods(
            store=store,
            pki=self.pki,
            clock=clock,
            cas=self.cas,
            authenticators=self.authenticators,
            identities=self.identities,
            external_jwt_signers=self.external_jwt_signers,
            ext_jwt=self.ext_jwt,
        )
        # the per-request bearer check (controller.auth.session_tokens) uses the same ext-jwt method as /authenticate
        self.ext_jwt_primary = next(method for method in methods if isinstance(method, ExtJwtMethod))
        self.auth = Authenticator(methods, factors=self.factors, api_sessions=self.api_sessions, events=self.events)
        self.oidc = Oidc.from_config(
            config,
            pki=self.pki,
            clock=clock,
            ids=ids,
            store=store,
            auth=self.auth,
            identities=self.identities,
            mfas=self.mfas,
            factors=self.factors,
            events=self.events,
            api_sessions=self.api_sessions,
            sessions=self.sessions,
            # NOTE(arch): a narrow callable: OIDC needs only this lookup of the config types.
            resolve_config_types=self.config_types.resolve,
        )
        self.session_tokens = SessionTokens(
            self.api_sessions,
            self.identities,
            self.oidc and self.oidc.sessions,
            ext_jwt=self.ext_jwt_primary,
            factors=self.factors,
            clock=clock,
        )
        self.controller_settings = ControllerSettingManager(core, instance_id=self.instance_id)
        self.revocations = RevocationManager(
            core, identities=self.identities, api_sessions=self.api_sessions, sessions=self.sessions
        )
        self._build_ops()
        self._register_cascades()
        self._register_listeners()
        self.faults = FaultInjector(ids)
        self.router_faults = RouterFaults(
            clock, ids, find_router=lambda key: self.edge_routers.find(key) or self.edge_routers.find_by_name(key)
        )

    def _build_identity_managers(self, core: Core) -> None:
        config = self.config
        self.identity_types = IdentityTypeManager(core)
        # cycle: auth policies name signers, and signers find identities, which need auth policies
        self.auth_policies = AuthPolicyManager(core, find_signer=lambda i: self.external_jwt_signers.find(i))
        # cycle: identities open enrollments and end API sessions, which both need identities
        self.identities = IdentityManager(
            core,
            auth_policies=self.auth_policies,
            open_enrollments=lambda i, request: self.enrollments.create_for_identity_request(i, request),
            end_api_sessions=lambda i: self.api_sessions.delete_for_identity(i),
        )
        self.authenticators = AuthenticatorManager(core, identities=self.identities)
        self.enrollments = EnrollmentManager(
            core,
            identities=self.identities,
            authenticators=self.authenticators,
            sign_jwt=partial(sign_enrollment_jwt, self.pki, config.base_url, ctrl_address=config.ctrl_address),
            identity_fields=IDENTITY_ENROLLMENTS,
            duration_minutes=config.enrollment_duration_minutes,
            router_duration_minutes=config.router_enrollment_duration_minutes,
        )
        # cycle: config types refuse a delete while configs of the type exist; configs validate against types
        self.config_types = ConfigTypeManager(core, config_ids_of_type=lambda i: self.configs.by_type.get(i))
        # cycle: API sessions resolve their tokens and owed factors through the authentication
        # services built later (which need API sessions); OIDC revocations likewise
        self.api_sessions = ApiSessionManager(
            core,
            identities=self.identities,
            timeout_seconds=config.session_timeout_seconds,
            resolve_config_types=self.config_types.resolve,
            resolve_token=lambda *args, **kwargs: self.session_tokens.resolve_token(*args, **kwargs),
            pending_factors=lambda *args, **kwargs: self.factors.pending(*args, **kwargs),
            revoke_identity_tokens=self._revoke_oidc_tokens,
        )

    def _revoke_oidc_tokens(self, identity_id: str) -> None:
        if self.oidc is not None:
            self.oidc.revocations.revoke(identity_id, "IDENTITY")

    def _build_network_managers(self, core: Core) -> None:
        network, store = self.network, self.store
        # cycle: configs refuse a delete while identity overrides use them; overrides name configs
        self.configs = ConfigManager(
            core,
            config_types=self.config_types,
            identities_using_config=lambda i: self.service_configs.identities_using_config(i),
        )
        self.services = ServiceManager(core, configs=self.configs)
        self.service_configs = ServiceConfigs(
            core, identities=self.identities, services=self.services, configs=self.configs
        )
        self.service_policies = ServicePolicyManager(core, network=network)
        self.edge_router_policies = EdgeRouterPolicyManager(core, network=network)
        self.service_edge_router_policies = ServiceEdgeRouterPolicyManager(core, network=network)
        self.forget_in_policies = forget_in_policies(
            (self.service_policies, self.edge_router_policies, self.service_edge_router_policies)
        )
        self.tunnelers = Tunnelers(core, identities=self.identities, edge_router_policies=self.edge_router_policies)
        self.terminators = TerminatorManager(core, services=self.services)
        router_parts = dict(
            presence=self.router_presence, configs=self.configs, enrollments=self.enrollments, tunnelers=self.tunnelers
        )
        self.routers = RouterManager(core, **router_parts)
        self.edge_routers = EdgeRouterManager(core, routers=self.routers, **router_parts)
        self.transit_routers = TransitRouterManager(core, routers=self.routers, **router_parts)
        self.posture_checks = PostureCheckManager(core)
        self.posture_check_types = PostureCheckTypeManager(core)
        # cycle: a posture report re-prompts MFA through service access, which evaluates posture
        self.posture = PostureData(
            clock=self.clock, events=self.events, mfa_reprompted=lambda *args: self.service_access.mfa_reprompted(*args)
        )
        self.service_access = ServiceAccess(
            store,
            network=network,
            services=self.services,
            config_types=self.config_types,
            configs=self.configs,
            service_configs=self.service_configs,
            posture=self.posture,
        )
        self.sessions = SessionManager(
            core,
            network=network,
            identities=self.identities,
            api_sessions=self.api_sessions,
            services=self.services,
            edge_routers=self.edge_routers,
            service_access=self.service_access,
            posture=self.posture,
        )
        self.service_update_markers = ServiceUpdateMarkers(
            store,
            self.engine,
            services=self.services,
            service_configs=self.service_configs,
            service_updates=self.service_updates,
        )

    def _build_ops(self) -> None:
        config, store, clock = self.config, self.store, self.clock
        self.database = Database(
            store=store,
            clock=clock,
            events=self.events,
            data_dir=config.data_dir,
            min_interval_seconds=config.snapshot_min_interval_seconds,
        )
        self.integrity = Integrity(
            store=store,
            clock=clock,
            cascades=self.cascades,
            policy=self.policy,
            database=self.database,
            events=self.events,
            unique_name_tables=[m.table for m in self._entity_managers() if m.names is not None],
        )
        self.traces = TraceManager(identities=self.identities, clock=clock, ids=self.ids, events=self.events)
        limiter = AuthRateLimiter(clock=clock, settings=config.extra.get("auth_rate_limit"))
        self.request_guard = RequestGuard(auth_limiter=limiter)

    def _entity_managers(self) -> list[EntityManager]:
        return [value for value in vars(self).values() if isinstance(value, EntityManager)]

    def _register_listeners(self) -> None:
        """Every listener, in the order it runs after a commit.

        Derived state registers itself as it is built, first, so that every listener below
        reads it up to date: the cascades' reference index (``Cascades``), the policy engine
        (``PolicySync``: it applies the commit, then calls the engine listeners below), and
        each manager's indexes (``controller/store/indexes.py``). No listener writes: one
        that must (a cascade) schedules the write with ``store.after_commit``, which runs
        once every listener of the commit has run, as a transaction of its own.
        """
        engine, store = self.engine, self.store
        # the policy engine's, with the identities whose policies changed:
        engine.add_listener(self.service_updates.bump)  # their service lists' lastChangeAt
        engine.add_listener(self.sessions.on_policy_change)  # their sessions lost access: after_commit
        # the store's, with the commit's changes:
        store.add_listener(self.service_update_markers.on_changes)  # services' data changed
        store.add_listener(self.events.on_changes)  # entity change and session events, last

    def _register_cascades(self) -> None:
        """Cascades that do more than the declared references' rules (``controller/entities.py``)."""
        register = self.cascades.register
        close_sessions = lambda r: self.api_sessions.delete_for_identity(r["id"])  # noqa: E731
        register("identities", close_sessions, "ApiSessionManager.delete_for_identity")
        register("identities", self.posture.forget_identity)
        register("identities", lambda r: self.service_updates.forget(r["id"]), "ServiceUpdates.forget")
        register("cas", self.cas.delete_dependents)
        register("routers", self.routers.delete_dependents)
        register("api_sessions", self.posture.forget_session)
        # ``@id`` role entries naming a deleted entity leave every policy (the engine knows which)
        for kind, target in ROLE_TARGETS.items():
            register(
                target.key, role_cascade(self.forget_in_policies, kind, target.flag), f"forget_in_policies({kind})"
            )

    def sweep(self) -> None:
        """The periodic upkeep a server runs: idle sessions go (in a cluster, by the leader only)."""
        if self.cluster is not None and not self.cluster.is_leader:
            return
        try:
            self.api_sessions.sweep()
        except (errors.Unavailable, errors.Conflict) as ex:  # a cluster without a quorum: next time
            log.info("sweep deferred: %s", ex)

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        self.router_faults.close()
        self.integrity.close()
        self.database.close()
        self.events.close()
        self.store.close()
