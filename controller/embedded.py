"""A controller built in this process, behind one handle: how the harness starts one.

The harness (its command line, the quickstarts, the pytest plugin, the notebooks, ``LocalController``) starts a
controller only through :class:`EmbeddedController` and talks to it through this handle or over HTTP: the WSGI
``app`` to serve or call in-process, the ``url`` once served, the ``clock`` to move, the simulated ``faults``, the
``events`` to watch, ``sweep()`` for a serving loop, the listeners that need the controller itself, and
``close()``. ``controller`` is the domain object, for tests that assert on it; the harness does not use it.
``python -m controller`` starts its controller through this handle too, and serves it with :func:`serve`.
"""

from __future__ import annotations

import threading

from controller.clock import Clock
from controller.config import Config


class EmbeddedController:
    """``EmbeddedController(config, clock=None, quickstart_policies=False)``; ``close()`` it (or ``with``)."""

    def __init__(self, config: Config | None = None, *, clock: Clock | None = None, quickstart_policies=False):
        from controller.app import create_app

        self.config = config if config is not None else Config()
        self.app = create_app(self.config, clock=clock)
        ctl = self.controller = self.app.controller
        self.clock, self.faults, self.events = ctl.clock, ctl.ops.faults, ctl.events
        #: the address it is served at, set by whoever serves it (``None`` in-process)
        self.url: str | None = None
        if quickstart_policies:
            from controller.bootstrap import ensure_quickstart_policies

            ensure_quickstart_policies(ctl.access.edge_router_policies, ctl.access.service_edge_router_policies)

    @property
    def pki(self):
        return self.controller.pki

    def sweep(self) -> None:
        """The periodic upkeep a serving loop runs between waits: idle API sessions expire (in a cluster, on the
        leader only)."""
        self.controller.sweep()

    def ctrl_listener(self, host: str, port: int, **options):
        """The control channel listener for routers run as their own processes (not started)."""
        from controller.server.serve import ctrl_listener

        return ctrl_listener(self.controller, host, port, **options)

    def start_router(self, host: str, port: int, advertise: str | None = None):
        """The embedded edge router, started."""
        from controller.server.serve import start_router

        return start_router(self.controller, host, port, advertise)

    def router_link(self, name: str):
        """The in-process adapter through which an edge router named ``name`` reaches this controller."""
        from controller.app import router_link

        return router_link(self.controller, name=name)

    def close(self) -> None:
        self.controller.close()

    def __enter__(self) -> EmbeddedController:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(
    config,
    *,
    port: int,
    http_port: int | None,
    stop: threading.Event,
    router_port: int | None = None,
    quickstart_policies: bool = False,
    router_advertise: str | None = None,
    temporary: bool = False,
    ctrl_port: int | None = None,
    ready_file: str | None = None,
) -> int:
    """Check every port, build the controller, start every listener, serve until ``stop`` is set.

    ``python -m controller`` runs this: its controller is an :class:`EmbeddedController`, as the harness starts one.

    Any listener that cannot start stops the others and raises ``ListenerError``. Once the
    admin API serves and the embedded router is online, one ready line is printed and, with
    ``ready_file``, the file is written (``controller.server.readiness``).
    """
    from controller.gc_pause import gc_paused
    from controller.heap import SurvivorFreezer, freeze_started_heap
    from controller.server.lifecycle import Listeners, wait_for_stop
    from controller.server.memory import limit_arenas
    from controller.server.readiness import announce_ready
    from controller.server.serve import banner, check_raft_port, listeners, raise_open_files

    limit_arenas()  # before the listeners' threads (controller.server.memory)
    built: list = []
    group = Listeners(
        config.host,
        listeners(
            lambda: built[0].app,
            config.host,
            port=port,
            http_port=http_port,
            router_port=router_port,
            router_advertise=router_advertise,
            ctrl_port=ctrl_port,
        ),
    )
    group.check()
    if config.cluster is not None:
        check_raft_port(config.cluster.raft_address)
    group.pick_free_ports("--port", "--ctrl-port")  # the API's and the control channel's addresses name them
    if config.api_address.endswith(":0"):  # no --advertise port: the HTTPS port, once picked
        config.api_address = f"{config.api_address[:-2]}:{group.planned('--port')}"
    if ctrl_port is not None:
        advertise = router_advertise or ("127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host)
        config.ctrl_address = f"tls:{advertise}:{group.planned('--ctrl-port')}"
    with gc_paused():  # frozen before the collector resumes: it would walk every new record once (controller.heap)
        built.append(handle := controller_or_listener_error(config, quickstart_policies))
        freeze_started_heap()
    raise_open_files()  # one descriptor per client connection, up to Limits.max_connections
    SurvivorFreezer().install()  # and what clients hold later leaves it after a full collection finds it alive
    try:
        group.start()
        router = next((server for listener, server in group.servers if listener.name == "router"), None)
        print(banner(config, group.port("HTTPS"), group.port("HTTP"), router, temporary=temporary), flush=True)
        announce_ready(config, group, router, ready_file)
        wait_for_stop(stop, handle.sweep)
    finally:
        stopped = group.stop()
        handle.close()
    return 0 if stopped else 1


def request_bodies(api: str = "management") -> dict[str, dict]:
    """Each operation's request body schema by operation id (what network files are checked against)."""
    from controller.api.routes import build_route_table

    return {op.op_id: op.body for op in build_route_table().for_api(api) if op.body}


def controller_or_listener_error(config, quickstart_policies: bool) -> EmbeddedController:
    """The controller ``serve`` runs; a cluster member whose raft port was taken meanwhile raises ``ListenerError``
    as a listener's port would."""
    from controller.cluster.member import RaftPortInUse
    from controller.server.lifecycle import Listener, ListenerError

    try:
        return EmbeddedController(config, quickstart_policies=quickstart_policies)
    except RaftPortInUse as ex:
        listener = Listener("raft", "--raft-port", ex.port, lambda bound: None)
        raise ListenerError(listener, ex.host, "is in use") from None
