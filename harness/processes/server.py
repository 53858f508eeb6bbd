"""``LocalController``: a real controller on free loopback ports, from Python.

It serves HTTPS (client certificates requested) and plain HTTP from a temporary
data folder, optionally in simulation mode, optionally with its edge router,
the two quickstart policies and a control channel listener (``ctrl=True``: routers
run as their own processes attach there, see ``harness.processes.routers``), and stops cleanly.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from controller.config import Config
from controller.embedded import EmbeddedController
from controller.server.serve import ThreadedServer, controller_limits, free_port
from controller.server.tls import TLSServer


class LocalController:
    """Start with ``start()`` (or ``with``); ``url`` is plain HTTP, ``https_url`` the TLS listener."""

    def __init__(
        self,
        *,
        simulation: bool = False,
        data_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        admin_password: str = "admin",
        router: bool = False,
        quickstart_policies: bool = False,
        ctrl: bool = False,
        ctrl_options: dict | None = None,
    ):
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="ziti-local-"))
        self.host = host
        # The enrollment JWTs name the HTTPS address, so it is chosen before the app is built.
        self.https_port = free_port(host)
        self.config = Config(
            data_dir=self.data_dir,
            host=host,
            api_address=f"{host}:{self.https_port}",
            simulation=simulation,
            admin_password=admin_password,
        )
        #: the control channel listener (``ctrl=True``); its address goes into router enrollment JWTs
        self.ctrl = None
        self._ctrl_options = dict(ctrl_options or {})
        self._want_ctrl = ctrl
        if ctrl:
            self.config.ctrl_address = f"tls:{host}:{free_port(host)}"
        #: the running controller's handle (``controller.embedded``), ``None`` while stopped
        self.embedded: EmbeddedController | None = None
        self._servers: list = []
        #: the edge router (``router=True``), listening on a free port
        self.router = None
        self._want_router = router
        self._quickstart_policies = quickstart_policies
        #: the HTTP and embedded router ports of the first start, kept by :meth:`restart`
        self._http_port = 0
        self._router_port = 0

    @property
    def app(self):
        """The running controller's WSGI app."""
        return self.embedded.app if self.embedded is not None else None

    @property
    def controller(self):
        """The running controller's domain object, for tests that assert on it."""
        return self.embedded.controller

    @property
    def url(self) -> str:
        return self._servers[1].url

    @property
    def http_port(self) -> int:
        return self._servers[1].port

    @property
    def https_url(self) -> str:
        return f"https://{self.host}:{self.https_port}"

    def start(self) -> LocalController:
        self.embedded = embedded = EmbeddedController(self.config, quickstart_policies=self._quickstart_policies)
        tls = TLSServer(embedded.app, self.host, self.https_port, embedded.pki, limits=controller_limits(embedded.app))
        tls.start()
        http = ThreadedServer(embedded.app, self.host, self._http_port).start()
        self._http_port = http.port
        embedded.url = http.url
        self._servers = [tls, http]
        if self._want_ctrl:
            port = int(self.config.ctrl_address.rsplit(":", 1)[1])
            self.ctrl = embedded.ctrl_listener(self.host, port, **self._ctrl_options)
            self.ctrl.start()
        if self._want_router:
            self.router = embedded.start_router(self.host, self._router_port)
            self._router_port = self.router.port
        return self

    def restart(self, while_down=None) -> LocalController:
        """Stop and start again on the same data folder and ports, as ``python -m controller`` restarted: routers
        running as their own processes see their control channel close and reconnect. ``while_down()``, if given,
        runs in between (what a router or an SDK does while the controller is away)."""
        self._shutdown()
        try:
            if while_down is not None:
                while_down()
        finally:
            self.start()
        return self

    def stop(self) -> None:
        self._shutdown()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _shutdown(self) -> None:
        if self.ctrl is not None:
            self.ctrl.stop()
            self.ctrl = None
        if self.router is not None:
            self.router.stop()
            self.router = None
        for server in self._servers:
            server.stop()
        self._servers = []
        if self.embedded is not None:
            self.embedded.close()
            self.embedded = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
