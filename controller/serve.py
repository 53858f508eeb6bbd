"""Serving the app: waitress for plain HTTP, the TLS listener for HTTPS.

``ThreadedController`` runs a server in a daemon thread with a readiness
event (port 0 picks a free port), for tests and scripts; ``run`` is what the
command line starts.
"""
from __future__ import annotations

import logging
import threading

import waitress

log = logging.getLogger("controller.serve")

#: waitress settings shared by the controller and the benchmark's baseline app
WAITRESS_SETTINGS = {"threads": 8, "connection_limit": 1000, "channel_timeout": 120, "ident": None,
                     "clear_untrusted_proxy_headers": True}


class ThreadedServer:
    """A waitress server in a daemon thread; ``stop`` ends it and its connections."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, **settings):
        self._server = waitress.create_server(app, host=host, port=port, **{**WAITRESS_SETTINGS, **settings})
        self.host = host
        self.port = self._server.effective_port
        self._thread = threading.Thread(target=self._run, name=f"waitress-{self.port}", daemon=True)
        self._ready = threading.Event()
        self.error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _run(self) -> None:
        self._ready.set()
        try:
            self._server.run()
        except BaseException as ex:  # noqa: BLE001 - surfaced to the test through .error
            if not getattr(self, "_stopping", False):
                self.error = ex

    def start(self) -> "ThreadedServer":
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        self._stopping = True
        server = self._server
        try:
            server.task_dispatcher.shutdown(timeout=5)
        finally:
            for channel in list(server._map.values()):
                try:
                    channel.close()
                except OSError:
                    pass
            server.close()
        self._thread.join(10)
        if self.error is not None:
            raise self.error

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _start_tls(app, host: str, port: int):
    """The HTTPS listener for both APIs, when the PKI is available."""
    ctl = app.controller
    if ctl.pki is None:
        return None
    from controller.tls import TLSServer

    server = TLSServer(app, host, port, ctl.pki)
    server.start()
    return server


def banner(config, https_port: int | None, http_port: int | None) -> str:
    lines = ["", "Python edge controller is running."]
    if https_port:
        lines.append(f"  HTTPS (both APIs): https://{config.host}:{https_port}/edge/management/v1 and /edge/client/v1")
    if http_port:
        lines.append(f"  HTTP  (local scripts): http://{config.host}:{http_port}/edge/management/v1")
    lines.append(f"  data folder: {config.data_dir}")
    lines.append(f"  admin login: {config.admin_username} / {config.admin_password}")
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


def run(config, *, port: int, http_port: int, stop: threading.Event) -> int:
    """Serve until ``stop`` is set; sweep idle API sessions every 5 seconds."""
    from controller.app import create_app

    app = create_app(config)
    ctl = app.controller
    tls = _start_tls(app, config.host, port)
    http_port = http_port if tls is not None else (http_port or port)
    http = ThreadedServer(app, config.host, http_port).start() if http_port else None
    print(banner(config, tls.port if tls else None, http.port if http else None), flush=True)
    try:
        while not stop.wait(5):
            ctl.api_sessions.sweep()
    finally:
        for server in (tls, http):
            if server is not None:
                server.stop()
        ctl.close()
    return 0
