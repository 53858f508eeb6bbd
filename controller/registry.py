"""The controller's typed registry: every service of one controller, built in one place in dependency order."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

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
from controller.policy.sync import PolicySync, ServiceUpdates
from controller.roles import Access, Accounts, Derived, Enrollment, Logins, Operations, Role, Routing
from controller.simulation import FaultInjector, RouterFaults
from controller.store.db import Store
from controller.store.indexes import Index, Indexes

log = logging.getLogger(__name__)


class Controller:
    """The typed registry of one controller's services, built in one place in dependency order.

    A few values and shared services sit on the controller itself; every other service belongs to
    one role (``controller/roles.py``): ``derived``, ``accounts``, ``logins``, ``enrollment``,
    ``access``, ``routing``, ``ops``. Each manager's constructor names the few collaborators it
    uses. Where two need each other, the one built first gets a narrow callable reaching the
    other (marked "cycle").
    """

    #: the values handlers and mappers may bind besides the roles' members (``bindable()``)
    BINDABLE = ("config", "clock", "ids", "instance_id", "started_at", "events", "pki", "cluster")

    config: Config
    store: Store
    clock: Clock
    ids: Ids
    instance_id: str
    started_at: str
    cascades: Cascades
    core: Core
    events: Events
    pki: ControllerPKI
    #: this member's cluster side (``controller.cluster.member.Cluster``); None for a single controller
    cluster: Cluster | None
    derived: Derived
    accounts: Accounts
    logins: Logins
    enrollment: Enrollment
    access: Access
    routing: Routing
    ops: Operations

    def __init__(self, config: Config, store: Store, clock: Clock, ids: Ids):
        self.config, self.store, self.clock, self.ids = config, store, clock, ids
        self.cluster = None  # set by ``create_app`` for a cluster member
        # Building reads the committed records into every index and registers nothing; the listeners
        # are registered after, in one place. The lock keeps any other commit (a cluster member's raft
        # thread) from falling between the two.
        with store.lock:
            self._build()
            self._register_cascades()
            self._register_listeners()

    def _build(self) -> None:
        config, store, clock, ids = self.config, self.store, self.clock, self.ids
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
            trace_id_of=lambda identity_id: self.ops.traces.trace_id_of(identity_id),
        )
        self.pki = load_pki(config)
        self.derived, self.accounts, self.logins = Derived(), Accounts(), Logins()
        self.enrollment, self.access, self.routing, self.ops = Enrollment(), Access(), Routing(), Operations()
        self.routing.router_presence = RouterPresence()
        self.routing.fabric = Fabric()
        derived = self.derived
        derived.policy = PolicySync(store)
        derived.engine = derived.policy.engine
        derived.service_updates = ServiceUpdates(clock)
        derived.network = Network(store, derived.engine)
        self._build_identity_managers(core)
        self._build_network_managers(core)
        self._build_auth_managers(core)
        self._build_ops()
        self.ops.faults = FaultInjector(ids)
        edge_routers = self.routing.edge_routers
        self.routing.router_faults = RouterFaults(
            clock, ids, find_router=lambda key: edge_routers.find(key) or edge_routers.find_by_name(key)
        )

    def bindable(self) -> dict[str, Any]:
        """What handlers and mappers may bind by name: every role's members and the ``BINDABLE`` values."""
        out = {name: getattr(self, name) for name in self.BINDABLE}
        for role in self.roles():
            out.update(role.members())
        return out

    def roles(self) -> tuple[Role, ...]:
        return self.derived, self.accounts, self.logins, self.enrollment, self.access, self.routing, self.ops

    def _build_identity_managers(self, core: Core) -> None:
        config, accounts, access, enrollment = self.config, self.accounts, self.access, self.enrollment
        accounts.identity_types = IdentityTypeManager(core)
        # cycle: auth policies name signers, and signers find identities, which need auth policies
        accounts.auth_policies = AuthPolicyManager(core, find_signer=lambda i: accounts.external_jwt_signers.find(i))
        # cycle: identities open enrollments and end API sessions, which both need identities
        accounts.identities = IdentityManager(
            core,
            auth_policies=accounts.auth_policies,
            open_enrollments=lambda i, request: enrollment.enrollments.create_for_identity_request(i, request),
            end_api_sessions=lambda i: accounts.api_sessions.delete_for_identity(i),
        )
        accounts.authenticators = AuthenticatorManager(core, identities=accounts.identities)
        enrollment.enrollments = EnrollmentManager(
            core,
            identities=accounts.identities,
            authenticators=accounts.authenticators,
            sign_jwt=partial(sign_enrollment_jwt, self.pki, config.base_url, ctrl_addresses=self.ctrl_addresses),
            identity_fields=IDENTITY_ENROLLMENTS,
            duration_minutes=config.enrollment_duration_minutes,
            router_duration_minutes=config.router_enrollment_duration_minutes,
        )
        # cycle: config types refuse a delete while configs of the type exist; configs validate against types
        access.config_types = ConfigTypeManager(core, config_ids_of_type=lambda i: access.configs.by_type.get(i))
        # cycle: API sessions resolve their tokens and owed factors through the authentication
        # services built later (which need API sessions); OIDC revocations likewise
        logins = self.logins
        accounts.api_sessions = ApiSessionManager(
            core,
            identities=accounts.identities,
            timeout_seconds=config.session_timeout_seconds,
            resolve_config_types=access.config_types.resolve,
            resolve_token=lambda *args, **kwargs: logins.session_tokens.resolve_token(*args, **kwargs),
            pending_factors=lambda *args, **kwargs: logins.factors.pending(*args, **kwargs),
            revoke_identity_tokens=self._revoke_oidc_tokens,
        )

    def ctrl_addresses(self) -> list[str]:
        """The control channel addresses a router is given at enrollment: this controller's, then the other
        cluster members' (as they recorded them), each once."""
        own = [self.config.ctrl_address] if self.config.ctrl_address else []
        if self.cluster is None:
            return own
        members = [member["address"] for member in self.cluster.ctrl_endpoints()["controllers"]]
        return list(dict.fromkeys(own + members))

    def _revoke_oidc_tokens(self, identity_id: str) -> None:
        if self.logins.oidc is not None:
            self.logins.oidc.revocations.revoke(identity_id, "IDENTITY")

    def _build_network_managers(self, core: Core) -> None:
        store, derived, accounts, access, routing = self.store, self.derived, self.accounts, self.access, self.routing
        network, identities = derived.network, accounts.identities
        # cycle: configs refuse a delete while identity overrides use them; overrides name configs
        access.configs = ConfigManager(
            core,
            config_types=access.config_types,
            identities_using_config=lambda i: access.service_configs.identities_using_config(i),
        )
        access.services = ServiceManager(core, configs=access.configs)
        access.service_configs = ServiceConfigs(
            core, identities=identities, services=access.services, configs=access.configs
        )
        access.service_policies = ServicePolicyManager(core, network=network)
        access.edge_router_policies = EdgeRouterPolicyManager(core, network=network)
        access.service_edge_router_policies = ServiceEdgeRouterPolicyManager(core, network=network)
        derived.forget_in_policies = forget_in_policies(
            (access.service_policies, access.edge_router_policies, access.service_edge_router_policies)
        )
        routing.tunnelers = Tunnelers(core, identities=identities, edge_router_policies=access.edge_router_policies)
        routing.terminators = TerminatorManager(core, services=access.services)
        router_parts = dict(
            presence=routing.router_presence,
            configs=access.configs,
            enrollments=self.enrollment.enrollments,
            tunnelers=routing.tunnelers,
        )
        routing.routers = RouterManager(core, **router_parts)
        routing.edge_routers = EdgeRouterManager(core, routers=routing.routers, **router_parts)
        routing.transit_routers = TransitRouterManager(core, routers=routing.routers, **router_parts)
        access.posture_checks = PostureCheckManager(core)
        access.posture_check_types = PostureCheckTypeManager(core)
        # cycle: a posture report re-prompts MFA through service access, which evaluates posture
        access.posture = PostureData(
            clock=self.clock,
            events=self.events,
            mfa_reprompted=lambda *args: access.service_access.mfa_reprompted(*args),
        )
        access.service_access = ServiceAccess(
            store,
            network=network,
            services=access.services,
            config_types=access.config_types,
            configs=access.configs,
            service_configs=access.service_configs,
            posture=access.posture,
        )
        access.sessions = SessionManager(
            core,
            network=network,
            identities=identities,
            api_sessions=accounts.api_sessions,
            services=access.services,
            edge_routers=routing.edge_routers,
            service_access=access.service_access,
            posture=access.posture,
        )
        derived.service_update_markers = ServiceUpdateMarkers(
            store,
            derived.engine,
            services=access.services,
            service_configs=access.service_configs,
            service_updates=derived.service_updates,
        )

    def _build_auth_managers(self, core: Core) -> None:
        config, store, clock, ids, pki = self.config, self.store, self.clock, self.ids, self.pki
        accounts, logins, enrollment, access = self.accounts, self.logins, self.enrollment, self.access
        identities, api_sessions = accounts.identities, accounts.api_sessions
        enrollment.cas = CaManager(core, identities=identities, pki_clock=pki.clock)
        accounts.api_session_certificates = ApiSessionCertificateManager(core, api_sessions=api_sessions, pki=pki)
        enrollment.cert_lifecycle = CertLifecycle(
            core,
            authenticators=accounts.authenticators,
            enrollments=enrollment.enrollments,
            cas=enrollment.cas,
            api_sessions=api_sessions,
            pki=pki,
        )
        accounts.mfas = MfaManager(
            core, identities=identities, api_sessions=api_sessions, events=self.events, totp_issuer=config.totp_issuer
        )
        accounts.external_jwt_signers = signers = ExternalJwtSignerManager(core, identities=identities)
        logins.ext_jwt = ExtJwtVerifier(signers=signers, clock=clock)
        logins.ext_jwt_secondary = ExtJwtSecondary(logins.ext_jwt, signers=signers)
        enrollment.enroll_methods = enrollment_methods(
            store=store,
            ids=ids,
            pki=pki,
            identities=identities,
            authenticators=accounts.authenticators,
            enrollments=enrollment.enrollments,
            cas=enrollment.cas,
            routers=self.routing.routers,
            auth_policies=accounts.auth_policies,
            external_jwt_signers=signers,
            ext_jwt=logins.ext_jwt,
        )
        logins.factors = SecondaryFactors(identities, accounts.mfas, logins.ext_jwt_secondary)
        methods = primary_methods(
            store=store,
            pki=pki,
            clock=clock,
            cas=enrollment.cas,
            authenticators=accounts.authenticators,
            identities=identities,
            external_jwt_signers=signers,
            ext_jwt=logins.ext_jwt,
        )
        # the per-request bearer check (controller.auth.session_tokens) uses the same ext-jwt method as /authenticate
        logins.ext_jwt_primary = next(method for method in methods if isinstance(method, ExtJwtMethod))
        logins.auth = Authenticator(methods, factors=logins.factors, api_sessions=api_sessions, events=self.events)
        logins.oidc = Oidc.from_config(
            config,
            pki=pki,
            clock=clock,
            ids=ids,
            store=store,
            auth=logins.auth,
            identities=identities,
            mfas=accounts.mfas,
            factors=logins.factors,
            events=self.events,
            api_sessions=api_sessions,
            sessions=access.sessions,
            # NOTE(arch): a narrow callable: OIDC needs only this lookup of the config types.
            resolve_config_types=access.config_types.resolve,
        )
        logins.session_tokens = SessionTokens(
            api_sessions,
            identities,
            logins.oidc and logins.oidc.sessions,
            ext_jwt=logins.ext_jwt_primary,
            factors=logins.factors,
            clock=clock,
        )
        self.ops.controller_settings = ControllerSettingManager(core, instance_id=self.instance_id)
        accounts.revocations = RevocationManager(
            core, identities=identities, api_sessions=api_sessions, sessions=access.sessions
        )

    def _build_ops(self) -> None:
        config, store, clock, ops = self.config, self.store, self.clock, self.ops
        ops.database = Database(
            store=store,
            clock=clock,
            events=self.events,
            data_dir=config.data_dir,
            min_interval_seconds=config.snapshot_min_interval_seconds,
        )
        ops.integrity = Integrity(
            store=store,
            clock=clock,
            cascades=self.cascades,
            policy=self.derived.policy,
            database=ops.database,
            events=self.events,
            unique_name_tables=[m.table for m in self._entity_managers() if m.names is not None],
        )
        ops.traces = TraceManager(identities=self.accounts.identities, clock=clock, ids=self.ids, events=self.events)
        limiter = AuthRateLimiter(clock=clock, settings=config.extra.get("auth_rate_limit"))
        ops.request_guard = RequestGuard(auth_limiter=limiter)

    def _entity_managers(self) -> list[EntityManager]:
        """Every entity manager built so far (a role's members are set one by one, in dependency order)."""
        return [value for role in self.roles() for value in vars(role).values() if isinstance(value, EntityManager)]

    def _register_listeners(self) -> None:
        """Every listener, registered here and nowhere else, in the order it runs after a commit.

        1. Derived state, so that every listener after it reads that state up to date:
           the cascades' reference index; the policy engine (``PolicySync`` applies the commit,
           then the engine calls its own listeners with the identities whose access may have
           changed: their service lists' ``lastChangeAt``, then their sessions' enforcement);
           every index a service holds (``controller/store/indexes.py``: names, tokens,
           references, the filters' indexes), which depend on nothing but the commit, behind
           one listener that hands each index the changes to its own table.
        2. What reads the derived state: the service update markers (a service's data
           changed), then the events (entity changes, session events), last.

        No listener writes: one that must (a cascade, ending sessions) schedules the write with
        ``store.after_commit``, which runs once every listener of the commit has run, as a
        transaction of its own.
        """
        store, derived, engine = self.store, self.derived, self.derived.engine
        store.add_listener(self.cascades.index.on_changes)
        store.add_listener(derived.policy.on_changes)
        engine.add_listener(derived.service_updates.bump)
        engine.add_listener(self.access.sessions.on_policy_change)  # schedules enforce_dirty (after_commit)
        store.add_listener(Indexes(self._indexes()).on_changes)  # each change reaches its table's indexes only
        store.add_listener(derived.service_update_markers.on_changes)
        store.add_listener(self.events.on_changes)

    def _indexes(self) -> list[Index]:
        """Every index a service of a role holds as an attribute, services in role order."""
        found: dict[int, Index] = {}
        for role in self.roles():
            for service in role.members().values():
                for value in getattr(service, "__dict__", {}).values():
                    if isinstance(value, Index):
                        found.setdefault(id(value), value)
        return list(found.values())

    def _register_cascades(self) -> None:
        """Cascades that do more than the declared references' rules (``controller/entities.py``)."""
        register = self.cascades.register
        accounts, access, routing = self.accounts, self.access, self.routing
        close_sessions = lambda r: accounts.api_sessions.delete_for_identity(r["id"])  # noqa: E731
        register("identities", close_sessions, "ApiSessionManager.delete_for_identity")
        register("identities", access.posture.forget_identity)
        register("identities", lambda r: self.derived.service_updates.forget(r["id"]), "ServiceUpdates.forget")
        register("cas", self.enrollment.cas.delete_dependents)
        register("routers", routing.routers.delete_dependents)
        register("api_sessions", access.posture.forget_session)
        # ``@id`` role entries naming a deleted entity leave every policy (the engine knows which)
        forget = self.derived.forget_in_policies
        for kind, target in ROLE_TARGETS.items():
            register(target.key, role_cascade(forget, kind, target.flag), f"forget_in_policies({kind})")

    def sweep(self) -> None:
        """The periodic upkeep a server runs: idle sessions go (in a cluster, by the leader only)."""
        if self.cluster is not None and not self.cluster.is_leader:
            return
        try:
            self.accounts.api_sessions.sweep()
        except (errors.Unavailable, errors.Conflict) as ex:  # a cluster without a quorum: next time
            log.info("sweep deferred: %s", ex)

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        self.routing.router_faults.close()
        self.ops.integrity.close()
        self.ops.database.close()
        self.events.close()
        self.store.close()
