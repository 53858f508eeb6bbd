"""A controller built in this process, behind one handle: how the harness starts one.

The harness (its command line, the quickstarts, the pytest plugin, the notebooks, ``LocalController``) starts a
controller only through :class:`EmbeddedController` and talks to it through this handle or over HTTP: the WSGI
``app`` to serve or call in-process, the ``url`` once served, the ``clock`` to move, the simulated ``faults``, the
``events`` to watch, ``sweep()`` for a serving loop, the listeners that need the controller itself, and
``close()``. ``controller`` is the domain object, for tests that assert on it; the harness does not use it.
(``python -m controller`` builds its own in ``controller.server.serve.run``.)
"""

from __future__ import annotations

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


def request_bodies(api: str = "management") -> dict[str, dict]:
    """Each operation's request body schema by operation id (what network files are checked against)."""
    from controller.api.routes import build_route_table

    return {op.op_id: op.body for op in build_route_table().for_api(api) if op.body}
