"""Round trips with the real OpenZiti C SDK (PyPI ``openziti``, libziti), run by ``benchmarks.router``.

``python -m benchmarks.sdk_echo serve IDENTITY SERVICE``: bind with the SDK and echo every connection until
killed (prints ``BOUND`` once the bind is up).
``python -m benchmarks.sdk_echo ping IDENTITY SERVICE COUNT``: dial with the SDK, send 64 bytes and wait for
them back ``COUNT`` times; prints one line ``p50_ms p99_ms``.
``python -m benchmarks.sdk_echo ping-tls PORT COUNT``: the same round trips over plain TLS to an echo server
on 127.0.0.1 (the anchor, with the same blocking Python socket at the client's end).

Each SDK side is a process of its own, as libziti keeps process-wide state.
"""

from __future__ import annotations

import socket
import ssl
import statistics
import sys
import threading
import time

WARM_UP = 50


def _round_trips(conn: socket.socket, count: int) -> None:
    payload = b"x" * 64
    samples = []
    for index in range(WARM_UP + count):
        started = time.perf_counter()
        conn.sendall(payload)
        got = 0
        while got < len(payload):
            chunk = conn.recv(65536)
            if not chunk:
                raise SystemExit("the echo closed the connection")
            got += len(chunk)
        if index >= WARM_UP:
            samples.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    print(f"{cuts[49]:.4f} {cuts[98]:.4f}", flush=True)


def serve(identity: str, service: str) -> None:
    import openziti

    server = openziti.load(identity).bind(service)
    server.listen(5)
    print("BOUND", flush=True)

    def echo(conn):
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    while True:
        conn, _ = server.accept()
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


def ping(identity: str, service: str, count: str) -> None:
    import openziti
    from openziti import zitilib

    context = openziti.load(identity)
    fd = zitilib.ziti_socket(socket.SOCK_STREAM)
    # openziti 0.6.0's connect() encodes a None terminator and fails; call the library as it would
    zitilib.check_error(zitilib._ziti_connect(fd, context._ctx, service.encode(), None))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fd) as conn:
        _round_trips(conn, int(count))


def ping_tls(port: str, count: str) -> None:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with context.wrap_socket(socket.create_connection(("127.0.0.1", int(port)))) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _round_trips(conn, int(count))


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"serve": serve, "ping": ping, "ping-tls": ping_tls}[mode](*args)
