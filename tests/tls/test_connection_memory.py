"""What a connection holds after it closes: nothing (reference counting frees it, no collector pass needed)."""

from __future__ import annotations

import gc
import threading
import weakref

import httpx
import pytest

from controller.pki import ControllerPKI
from controller.server.http_connection import Connection
from controller.server.serve import Limits, ThreadedServer
from controller.server.tls import TLSServer
from harness.client import pki as hp


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return ControllerPKI.load_or_create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(params=["http", "https"])
def server(request, pki, monkeypatch):
    made: list = []
    lost = threading.Event()
    real_lost = Connection.connection_lost

    def remembering_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    def signalling_lost(self, exc):
        real_lost(self, exc)
        lost.set()

    real_init = Connection.__init__
    monkeypatch.setattr(Connection, "__init__", remembering_init)
    monkeypatch.setattr(Connection, "connection_lost", signalling_lost)
    if request.param == "https":
        started = TLSServer(hello_app, "127.0.0.1", 0, pki, threads=2, limits=Limits())
    else:
        started = ThreadedServer(hello_app, "127.0.0.1", 0, threads=2, limits=Limits())
    started.start()
    yield started, made, lost
    started.stop()


def test_a_closed_connection_is_freed_without_the_cyclic_collector(server, pki):
    listener, made, lost = server
    verify = hp.client_ssl_context(pki.ca_bundle_pem()) if listener.scheme == "https" else False
    enabled = gc.isenabled()
    gc.disable()
    try:
        with httpx.Client(base_url=listener.url, verify=verify, timeout=5) as client:
            assert client.get("/").text == "hello"
        assert lost.wait(5)
        done = threading.Event()
        listener.loop.call_soon_threadsafe(done.set)  # the loop has finished the close callbacks
        assert done.wait(5)
        assert len(made) == 1
        assert made[0]() is None
    finally:
        if enabled:
            gc.enable()
