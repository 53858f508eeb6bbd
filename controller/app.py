"""``create_app``: wires config, clock, ids and store into a Falcon WSGI app."""

from __future__ import annotations

from pathlib import Path

import falcon

from controller.api import ops_simulation
from controller.api.access_log import AccessLogMiddleware
from controller.api.cors import CorsMiddleware
from controller.api.guards import GuardMiddleware, on_dropped
from controller.api.middleware import RequestMiddleware, install_error_handlers
from controller.api.operations import MANAGEMENT, PREFIXES, RouteTable
from controller.api.ops_import import IMPORT_PATH, MAX_IMPORT_BODY
from controller.api.routes import shared_routing
from controller.api.spa import ROUTE, SinglePageApp
from controller.api.wiring import BoundApi
from controller.bootstrap import bootstrap
from controller.clock import Clock
from controller.config import VERSION, Config
from controller.gc_pause import gc_paused
from controller.ids import Ids
from controller.private_files import prepare_data_folder
from controller.registry import Controller
from controller.router_link import DEFAULT_NAME as DEFAULT_ROUTER_NAME
from controller.router_link import RouterLink
from controller.simulation import DroppedConnection, SimulatedClock
from controller.store.db import Store


class ControllerApp(falcon.App):
    """The WSGI app; ``app.controller`` reaches the domain services behind it, ``app.api`` the bound operations."""

    controller: Controller
    api: BoundApi

    #: paths taking bodies larger than the default, with their limit (the server enforces them)
    large_bodies = ((PREFIXES[MANAGEMENT] + IMPORT_PATH, MAX_IMPORT_BODY),)

    @property
    def routes(self) -> RouteTable:
        return self.api.routes

    def admin_presented(self, zt_session: str | None, bearer_tokens: tuple[str, ...]) -> bool:
        """Whether these credentials are a live admin session: the server's gate for ``large_bodies``."""
        return self.controller.logins.session_tokens.admin_presented(zt_session, bearer_tokens)


@gc_paused()
def create_app(
    config: Config | None = None, *, clock: Clock | None = None, ids: Ids | None = None, store: Store | None = None
) -> ControllerApp:
    """Build a controller WSGI app. Inject clock, ids and store in tests; patch nothing.

    The cyclic collector is paused throughout (``controller.gc_pause``): the records and indexes built
    here hold no cycles, and a collection between two of the bulk steps would walk all of them, in
    the young generations, once per generation: more than a second on the large shape.
    """
    config = config or Config()
    clock = clock or (SimulatedClock() if config.simulation else Clock())
    ids = ids or Ids()
    if store is None:
        store = Store(Path(config.data_dir) / "db" if config.data_dir else None, fsync=config.fsync)
    if config.data_dir is not None:  # once the store accepted the folder: a refused one is left untouched
        prepare_data_folder(config.data_dir)  # APPSEC(secrets-at-rest): owner-only, repaired at start
    if config.cluster is None:
        ctl = Controller(config, store, clock, ids)
    else:
        ctl = _cluster_member(config, store, clock, ids)

    def start() -> None:
        bootstrap(
            store=store,
            clock=clock,
            config=config,
            identity_types=ctl.accounts.identity_types,
            auth_policies=ctl.accounts.auth_policies,
            controller_settings=ctl.ops.controller_settings,
            identities=ctl.accounts.identities,
            authenticators=ctl.accounts.authenticators,
        )
        if ctl.cluster is not None:
            ctl.cluster.register(config.api_address, ctl.pki.server_chain_pem(), VERSION, config.ctrl_address)

    if ctl.cluster is None:
        start()
    else:
        ctl.cluster.until_written(start)  # a cluster settling (a member just added) gets its time
    routes, falcon_router = shared_routing((ops_simulation,) if config.simulation else ())
    api = BoundApi(routes, ctl.bindable())
    app = ControllerApp(
        middleware=[
            CorsMiddleware(),
            RequestMiddleware(ids=ids, instance_id=ctl.instance_id, api=api),
            GuardMiddleware(ctl.ops.request_guard, ctl.ops.faults),
            AccessLogMiddleware(),
        ],
        cors_enable=False,
        router=falcon_router,
    )
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    install_error_handlers(app, ids)
    app.add_error_handler(DroppedConnection, on_dropped)
    if config.console_dir is not None:
        app.add_sink(SinglePageApp(config.console_dir), ROUTE)
    app.controller, app.api = ctl, api
    return app


def _cluster_member(config: Config, store: Store, clock: Clock, ids: Ids) -> Controller:
    """A cluster member's registry: its raft side caught up first, the services built from that store.

    The store lock is held while the services build their indexes, so no entry the raft
    thread applies meanwhile is missed by a listener not yet registered.
    """
    from controller.cluster.member import Cluster, cluster_password
    from controller.pki.loader import load_pki

    password = cluster_password(load_pki(config).root_key)  # creates the first member's PKI
    cluster = Cluster(store, Path(config.data_dir) / "raft", config.cluster, password)
    try:
        with store.lock:
            ctl = Controller(config, store, clock, ids)
    except BaseException:
        cluster.close()
        raise
    ctl.cluster = cluster
    cluster.announce(lambda **fields: ctl.events.emit("cluster", **fields))  # leadership changes as events
    if ctl.logins.oidc is not None:  # one key set: every member's tokens verify here
        ctl.logins.oidc.signer.peers = cluster.peer_keys
    return ctl


def router_link(
    ctl: Controller, name: str = DEFAULT_ROUTER_NAME, hostnames: tuple[str, ...] = (), *, router_id: str = ""
) -> RouterLink:
    """The adapter an edge router named ``name`` reaches this controller through.

    The embedded router learns its id from ``credentials()``; an enrolled router's control
    channel names it (``router_id``), since its certificate says who it is.
    """
    if name == DEFAULT_ROUTER_NAME and ctl.cluster is not None:
        name = f"router-{ctl.instance_id}"  # each member's own router, as the real HA quickstart names it
    accounts, routing, oidc = ctl.accounts, ctl.routing, ctl.logins.oidc
    return RouterLink(
        name,
        hostnames,
        router_id=router_id,
        pki=ctl.pki,
        store=ctl.store,
        events=ctl.events,
        engine=ctl.derived.engine,
        api_sessions=accounts.api_sessions,
        api_session_certificates=accounts.api_session_certificates,
        authenticators=accounts.authenticators,
        sessions=ctl.access.sessions,
        services=ctl.access.services,
        routers=routing.routers,
        edge_routers=routing.edge_routers,
        terminators=routing.terminators,
        router_presence=routing.router_presence,
        instance_id=ctl.instance_id,
        fabric=routing.fabric,
        clock=ctl.clock,
        router_faults=routing.router_faults,
        oidc_jwks=oidc.signer.jwks if oidc is not None else None,
        cluster=ctl.cluster,
    )


def remote_router_link(ctl: Controller, router: dict) -> RouterLink:
    """The adapter of an enrolled router connected over the control channel (``controller.ctrl``)."""
    return router_link(ctl, router.get("name") or router["id"], router_id=router["id"])
