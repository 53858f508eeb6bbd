"""``create_app``: wires config, clock, ids and store into a Falcon WSGI app."""

from __future__ import annotations

import logging
from pathlib import Path

import falcon

from controller.api import ops_simulation
from controller.api.access_log import AccessLogMiddleware
from controller.api.cors import CorsMiddleware
from controller.api.middleware import RequestMiddleware, install_error_handlers
from controller.api.openapi import document
from controller.api.routes import shared_routing
from controller.auth.cert import CertMethod
from controller.auth.ext_jwt import ExtJwtMethod, ExtJwtSecondary, ExtJwtVerifier
from controller.auth.factors import SecondaryFactors
from controller.auth.methods import Authenticator, PasswordMethod
from controller.auth.session_tokens import SessionTokens
from controller.bootstrap import bootstrap
from controller.clock import Clock, rfc3339
from controller.config import Config
from controller.enroll.jwt import sign_enrollment_jwt
from controller.enroll.methods import enrollment_methods
from controller.events import Events
from controller.ids import Ids
from controller.model.api_session import ApiSessionManager
from controller.model.api_session_certificate import ApiSessionCertificateManager
from controller.model.auth_policy import AuthPolicyManager
from controller.model.authenticator import AuthenticatorManager
from controller.model.authenticator_lifecycle import CertLifecycle
from controller.model.ca import CaManager
from controller.model.cascades import Cascades
from controller.model.enrollment import EnrollmentManager
from controller.model.external_jwt_signer import ExternalJwtSignerManager
from controller.model.identity import IdentityManager
from controller.model.identity_type import IdentityTypeManager
from controller.model.mfa import MfaManager
from controller.model.network import NETWORK_MANAGER_NAMES, NetworkManagers
from controller.model.network import install as install_network
from controller.model.revocation import RevocationManager
from controller.model.router_presence import RouterPresence
from controller.model.settings import ControllerSettingManager
from controller.model.views import entity_ref
from controller.oidc.service import Oidc
from controller.ops.database import Database
from controller.ops.integrity import Integrity
from controller.ops.requests import RequestGuard
from controller.ops.trace import TraceManager
from controller.pki.certs import cert_pem, fingerprint
from controller.pki.loader import load_pki
from controller.policy.sync import PolicySync, ServiceUpdates
from controller.router_link import DEFAULT_NAME as DEFAULT_ROUTER_NAME
from controller.router_link import RouterLink
from controller.simulation import DroppedConnection, FaultInjector, SimulatedClock, on_dropped
from controller.store.db import Store

log = logging.getLogger("controller")


class Controller:
    """Every service of one controller: store, clock, ids, managers and routes."""

    def __init__(self, config: Config, store: Store, clock: Clock, ids: Ids):
        self.config, self.store, self.clock, self.ids = config, store, clock, ids
        self.instance_id = ids.short()
        self.started_at = rfc3339(clock.now())
        self.cascades = Cascades()
        self.events = Events(self)
        self.pki = load_pki(config)
        self.router_presence = RouterPresence()
        self.identity_types = IdentityTypeManager(self)
        self.auth_policies = AuthPolicyManager(self)
        self.identities = IdentityManager(self)
        self.authenticators = AuthenticatorManager(self)
        self.enrollments = EnrollmentManager(self)
        self.api_sessions = ApiSessionManager(self)
        self.policy = PolicySync(store)
        self.engine = self.policy.engine
        self.service_updates = ServiceUpdates(clock)
        self.engine.add_listener(self.service_updates.bump)
        self.network_managers: NetworkManagers = install_network(self)
        self.cas = CaManager(self)
        self.api_session_certificates = ApiSessionCertificateManager(self)
        self.cert_lifecycle = CertLifecycle(self)
        self.mfas = MfaManager(self)
        self.external_jwt_signers = ExternalJwtSignerManager(self)
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
            routers=self.network_managers.routers,
            auth_policies=self.auth_policies,
            external_jwt_signers=self.external_jwt_signers,
            ext_jwt=self.ext_jwt,
        )
        self.factors = SecondaryFactors(self.identities, self.mfas, self.ext_jwt_secondary)
        self.auth = Authenticator(
            [
                PasswordMethod(store=store, authenticators=self.authenticators, identities=self.identities),
                CertMethod(
                    pki=self.pki,
                    cas=self.cas,
                    authenticators=self.authenticators,
                    identities=self.identities,
                    clock=clock,
                ),
                ExtJwtMethod(self.ext_jwt, signers=self.external_jwt_signers, identities=self.identities),
            ],
            factors=self.factors,
            api_sessions=self.api_sessions,
            events=self.events,
        )
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
            sessions=self.network_managers.sessions,
            # NOTE(arch): a narrow callable: OIDC needs only this lookup of the config types.
            resolve_config_types=self.resolve_config_types,
        )
        self.session_tokens = SessionTokens(self.api_sessions, self.identities, self.oidc and self.oidc.sessions)
        self.controller_settings = ControllerSettingManager(self)
        self.revocations = RevocationManager(self)
        self.database = Database(self)
        self.integrity = Integrity(self)
        self.traces = TraceManager(self)
        self.request_guard = RequestGuard(self)
        self._register_cascades()
        self.faults = FaultInjector(ids)
        self.routes, self.falcon_router = shared_routing((ops_simulation,) if config.simulation else ())
        self._openapi: dict[str, dict] = {}

    def __getattr__(self, name: str):
        # NOTE(arch): the network managers live in the typed registry ``network_managers``;
        # ``ctl.<manager>`` still reaches them while callers move over (issue 12, item 2).
        if name in NETWORK_MANAGER_NAMES and "network_managers" in self.__dict__:
            return getattr(self.__dict__["network_managers"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _register_cascades(self) -> None:
        self.cascades.register("identities", self.authenticators.delete_for_identity)
        self.cascades.register("identities", self.enrollments.delete_for_identity)
        self.cascades.register("identities", lambda r: self.api_sessions.delete_for_identity(r["id"]))
        self.cascades.register("cas", self.cas.delete_dependents)
        self.cascades.register("api_sessions", self.api_session_certificates.delete_for_session)
        self.cascades.register("identities", self.mfas.delete_for_identity)

    # -- hooks the later feature areas fill in ---------------------------------
    def before_request(self, req, resp) -> None:
        """Per-request hook (fault injection, rate limits)."""
        self.request_guard.before_request(req, resp)
        self.faults.apply(req)

    def mfa_enabled(self, identity_id: str) -> bool:
        return self.factors.mfa_enabled(identity_id)

    def resolve_config_types(self, names: list[str]) -> list[str]:
        """Config type names or ids -> ids; ``all`` stays ``["all"]``; unknown ones are ignored."""
        if "all" in names:
            return ["all"]
        out = []
        for name in names:
            record = self.config_types.find(name) or self.config_types.find_by_name(name)
            if record is not None:
                out.append(record["id"])
        return out

    def enrollment_jwt(self, record: dict) -> str:
        """The enrollment JWT, signed with the TLS server certificate's key like the real one."""
        return sign_enrollment_jwt(self.pki, self.config.base_url, record)

    def ref(self, table_or_collection: str, entity_id: str | None) -> dict | None:
        if entity_id is None:
            return None
        table = table_or_collection.replace("-", "_")
        record = self.store.get(table, entity_id)
        return entity_ref(table_or_collection.replace("_", "-"), entity_id, record.get("name") if record else None)

    def controller_view(self) -> dict:
        base = self.config.base_url
        return {
            "_links": {"self": {"href": f"./controllers/{self.instance_id}"}},
            "id": self.instance_id,
            "name": self.config.extra.get("controller_name", "controller"),
            "createdAt": self.started_at,
            "updatedAt": self.started_at,
            "tags": {},
            "isOnline": True,
            "lastJoinedAt": self.started_at,
            "ctrlAddress": None,
            "certPem": cert_pem(self.pki.server_cert),
            "fingerprint": fingerprint(self.pki.server_cert),
            "apiAddresses": {
                "edge-client": [{"url": base + "/edge/client/v1", "version": "v1"}],
                "edge-management": [{"url": base + "/edge/management/v1", "version": "v1"}],
            },
        }

    def openapi(self, api: str) -> dict:
        if api not in self._openapi:
            self._openapi[api] = document(self.routes, api)
        return self._openapi[api]

    def close(self) -> None:
        self.integrity.close()
        self.database.close()
        self.events.close()
        self.store.close()


class ControllerApp(falcon.App):
    """The WSGI app; ``app.controller`` reaches the services behind it."""

    controller: Controller


def create_app(
    config: Config | None = None, *, clock: Clock | None = None, ids: Ids | None = None, store: Store | None = None
) -> ControllerApp:
    """Build a controller WSGI app. Inject clock, ids and store in tests; patch nothing."""
    config = config or Config()
    clock = clock or (SimulatedClock() if config.simulation else Clock())
    ids = ids or Ids()
    if store is None:
        store = Store(Path(config.data_dir) / "db" if config.data_dir else None, fsync=config.fsync)
    ctl = Controller(config, store, clock, ids)
    bootstrap(
        store=store,
        clock=clock,
        config=config,
        identity_types=ctl.identity_types,
        auth_policies=ctl.auth_policies,
        controller_settings=ctl.controller_settings,
        identities=ctl.identities,
        authenticators=ctl.authenticators,
    )
    app = ControllerApp(
        middleware=[CorsMiddleware(), RequestMiddleware(ctl), AccessLogMiddleware()],
        cors_enable=False,
        router=ctl.falcon_router,
    )
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    install_error_handlers(app, ctl)
    app.add_error_handler(DroppedConnection, on_dropped)
    app.controller = ctl
    return app


def router_link(ctl: Controller, name: str = DEFAULT_ROUTER_NAME, hostnames: tuple[str, ...] = ()) -> RouterLink:
    """The adapter an edge router named ``name`` reaches this controller through."""
    managers = ctl.network_managers
    return RouterLink(
        name,
        hostnames,
        pki=ctl.pki,
        store=ctl.store,
        events=ctl.events,
        engine=managers.network.engine,
        api_sessions=ctl.api_sessions,
        api_session_certificates=ctl.api_session_certificates,
        authenticators=ctl.authenticators,
        sessions=managers.sessions,
        services=managers.services,
        routers=managers.routers,
        edge_routers=managers.edge_routers,
        terminators=managers.terminators,
        router_presence=ctl.router_presence,
        instance_id=ctl.instance_id,
    )
