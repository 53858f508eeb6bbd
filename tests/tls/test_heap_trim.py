"""After many clients leave, the server gives the memory they held back to the system (controller.server.memory)."""

from __future__ import annotations

import threading

import httpx

from controller.pki import ControllerPKI
from controller.server.memory import ARENAS, HeapTrimmer, limit_arenas, trim_heap
from controller.server.serve import Limits
from controller.server.tls import TLSServer
from harness.client import pki as hp


def hello_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]


class Recorder:
    def __init__(self):
        self.calls = 0
        self.done = threading.Event()

    def __call__(self):
        self.calls += 1
        self.done.set()


def test_a_trim_follows_a_large_drop_only_once_per_drop():
    trim = Recorder()
    trimmer = HeapTrimmer(drop=100, trim=trim)
    for count in (0, 50, 120, 150, 60):  # down 90 from the highest (150): not enough
        assert not trimmer.observe(count)
    assert trimmer.observe(50)  # down 100
    assert trim.done.wait(5)
    assert not trimmer.observe(20)  # the drop counts from 50 again
    trimmer.opened(1000)
    assert not trimmer.observe(600)  # 400 fewer is not half of 1,000
    assert (trim.calls, trimmer.trims) == (1, 1)


def test_the_server_trims_once_its_connections_dropped(tmp_path):
    pki = ControllerPKI.load_or_create(tmp_path / "pki")
    server = TLSServer(hello_app, "127.0.0.1", 0, pki, threads=2, limits=Limits()).start()
    trim = Recorder()
    server.trimmer = HeapTrimmer(drop=6, trim=trim)
    try:
        verify = hp.client_ssl_context(pki.ca_bundle_pem())
        clients = [httpx.Client(base_url=server.url, verify=verify, timeout=5) for _ in range(8)]
        for client in clients:
            assert client.get("/").text == "hello"  # each holds its keep-alive connection
        assert not trim.calls
        for client in clients:
            client.close()
        assert trim.done.wait(10)  # the server's sweep saw the drop
    finally:
        server.stop()


def test_trimming_the_heap_works_on_this_c_library():
    assert trim_heap()


def test_the_serving_process_limits_glibc_arenas_unless_the_environment_says_otherwise():
    calls = []

    def mallopt(option, value):
        calls.append((option, value))
        return 1

    assert limit_arenas(environ={}, mallopt=mallopt)
    assert calls == [(-8, ARENAS)]  # M_ARENA_MAX
    assert not limit_arenas(environ={"MALLOC_ARENA_MAX": "4"}, mallopt=mallopt)
    assert calls == [(-8, ARENAS)]
    assert not limit_arenas(environ={}, mallopt=lambda option, value: 0)  # refused by the C library
