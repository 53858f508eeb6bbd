"""Run by tests/router/test_real_sdk.py in a subprocess: the real ``openziti`` SDK (libziti).

``python sdk_echo.py bind BINDER SERVICE``: bind, echo one connection, exit.
``python sdk_echo.py dial DIALER SERVICE MESSAGE``: dial, send, print the reply
(``dial-fin``: half-close after sending, read until the host closes).
``python sdk_echo.py both BINDER DIALER SERVICE MESSAGE``: both in one process.
``python sdk_echo.py serve BINDER SERVICE NAME``: bind and answer ``NAME:data`` on every connection until killed.
``python sdk_echo.py dial-each DIALER SERVICE``: one SDK context; for each line on stdin, dial, send it, print
the reply (``ECHO ...`` or ``FAILED ...``); ``dial-hold``: the same, each connection left open (libziti 0.6.0
refuses a dial on a descriptor number it still tracks as connected when the previous one was just closed).
``python sdk_echo.py dial-services DIALER``: as ``dial-each``, each line ``SERVICE MESSAGE`` (a service listed later too).
``python sdk_echo.py enroll JWT_FILE IDENTITY_FILE``: enroll with the SDK itself, write the identity file.

Runs with ``openziti`` 0.6.0 (libziti 0.29) and 1.x (libziti 1.18): 1.x's ``load`` returns ``(context, error)``
a bound socket's ``accept`` can raise ``BlockingIOError`` while nobody is waiting, and the connections it
accepts are non-blocking.
"""

import select
import socket
import sys
import threading

import openziti
from openziti import zitilib


def load(identity: str):
    loaded = openziti.load(identity)
    if isinstance(loaded, tuple):  # openziti 1.x
        context, error = loaded
        zitilib.check_error(error)
        return context
    return loaded


def accept(server):
    while True:
        try:
            conn, peer = server.accept()
        except BlockingIOError:  # openziti 1.x: nothing waiting yet
            select.select([server], [], [], 1.0)
            continue
        conn.setblocking(True)  # openziti 1.x hands accepted connections over non-blocking
        return conn, peer


def bind(identity: str, service: str) -> threading.Thread:
    server = load(identity).bind(service)
    server.listen(5)

    def serve():
        conn, _ = accept(server)
        while data := conn.recv(65536):
            conn.sendall(data)
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    print("BOUND", flush=True)
    return thread


def dial(identity: str, service: str, message: bytes, half_close: bool = False) -> None:
    context = load(identity)
    fd = zitilib.ziti_socket(socket.SOCK_STREAM)
    # NOTE: openziti 0.6.0's connect() encodes a None terminator and fails; call the library as it would
    zitilib.check_error(zitilib._ziti_connect(fd, context._ctx, service.encode(), None))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fd) as conn:
        conn.sendall(message)
        reply = b""
        if half_close:  # FIN, then read until the host's end of stream
            conn.shutdown(socket.SHUT_WR)
            while chunk := conn.recv(65536):
                reply += chunk
        while len(reply) < len(message):
            reply += conn.recv(65536)
    print("ECHO", reply.decode(), flush=True)


def serve(identity: str, service: str, name: str) -> None:
    server = load(identity).bind(service)
    server.listen(5)
    print("BOUND", flush=True)

    def answer(conn):
        while data := conn.recv(65536):
            conn.sendall(name.encode() + b":" + data)
        conn.close()

    while True:
        conn, _ = accept(server)
        threading.Thread(target=answer, args=(conn,), daemon=True).start()


def dial_each(identity: str, service: str | None, hold: bool = False) -> None:
    context = load(identity)
    held = []
    for line in sys.stdin:
        message = line.strip().encode()
        if service is None:  # dial-services: each line names the service first
            named, _, message = message.partition(b" ")
        try:
            fd = zitilib.ziti_socket(socket.SOCK_STREAM)
            target = service.encode() if service is not None else named
            zitilib.check_error(zitilib._ziti_connect(fd, context._ctx, target, None))
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fd)
            if hold:  # kept open: libziti 0.6.0 refuses a new dial on a descriptor number it still tracks
                held.append(conn)
            with conn if not hold else _kept(conn):
                conn.sendall(message)
                reply = b""
                while not reply.endswith(message):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
            print("ECHO", reply.decode(), flush=True)
        except Exception as ex:  # noqa: BLE001 - the test reads the outcome
            print("FAILED", ex, flush=True)


class _kept:
    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        return False


def main(mode: str, *args: str) -> None:
    if mode == "enroll":
        with open(args[1], "w") as out:
            out.write(openziti.enroll(args[0]))
    elif mode == "bind":
        bind(*args).join(60)
    elif mode == "serve":
        serve(*args)
    elif mode in ("dial-each", "dial-hold"):
        dial_each(*args, hold=mode == "dial-hold")
    elif mode == "dial-services":
        dial_each(args[0], None)
    elif mode in ("dial", "dial-fin"):
        dial(args[0], args[1], args[2].encode(), half_close=mode == "dial-fin")
    else:
        binder, dialer, service, message = args
        bind(binder, service)
        dial(dialer, service, message.encode())


if __name__ == "__main__":
    main(*sys.argv[1:])
