"""HTTPS listener that hands the client's certificate chain to the WSGI app.

Stack: **cheroot** (CherryPy's threaded HTTP/1.1 WSGI server, keep-alive) with
its **pyOpenSSL** adapter, subclassed. Why:

* The controller must *request* a client certificate without verifying it in
  the handshake (Go's ``RequestClientCert``) and see every certificate the
  client sent. Python's ``ssl`` cannot: ``CERT_OPTIONAL`` still aborts the
  handshake on an unknown CA, and only the leaf is exposed. pyOpenSSL offers
  ``set_verify(VERIFY_PEER, accept-all callback)`` and the peer chain.
* cheroot ships a pyOpenSSL adapter and a per-request environ hook, so the
  chain is attached from the TLS connection object itself; waitress has no TLS.

The adapter's stock socket files poll ``WantRead`` with sleeps (and can drop a
partly read line); here the TLS connection is wrapped so reads and writes wait
on the socket instead, with the server's timeout.
"""
from __future__ import annotations

import select
import socket
import threading
import time

from cheroot import wsgi
from cheroot.ssl import pyopenssl as cheroot_pyopenssl
from cryptography import x509
from OpenSSL import SSL

from controller.pki.ca import ControllerPKI
from controller.pki.certs import der

PEER_CERTS_KEY = "controller.peer_certs"
SESSION_ID_CONTEXT = b"ziti-edge-controller"


def _accept_any(_conn, _cert, _errno, _depth, _ok) -> bool:
    """APPSEC(request-client-cert): the handshake never judges the client cert; endpoints do."""
    return True


def server_context(pki: ControllerPKI) -> SSL.Context:
    """A TLS ≥1.2 server context serving leaf + intermediate and requesting a client cert."""
    ctx = SSL.Context(SSL.TLS_SERVER_METHOD)
    ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
    ctx.use_certificate(pki.server_cert)
    ctx.add_extra_chain_cert(pki.intermediate_cert)
    ctx.use_privatekey(pki.server_key)
    ctx.check_privatekey()
    ctx.set_verify(SSL.VERIFY_PEER, _accept_any)
    # APPSEC(no-renegotiation): the chain seen by a request is the one from the
    # handshake; no mid-connection swap, and no renegotiation DoS.
    ctx.set_options(SSL.OP_NO_RENEGOTIATION | SSL.OP_NO_COMPRESSION | SSL.OP_NO_TICKET)
    # APPSEC(no-resumption): each connection proves possession of its client key afresh.
    ctx.set_session_cache_mode(SSL.SESS_CACHE_OFF)
    ctx.set_session_id(SESSION_ID_CONTEXT)
    return ctx


def peer_chain(conn) -> list[x509.Certificate]:
    """Leaf first, then the certificates the client sent after it (unverified)."""
    if not isinstance(conn, SSL.Connection):
        return []
    leaf = conn.get_peer_certificate(as_cryptography=True)
    if leaf is None:
        return []
    rest = conn.get_peer_cert_chain(as_cryptography=True) or []
    # Server side OpenSSL omits the leaf from the chain; drop it if present anyway.
    if rest and der(rest[0]) == der(leaf):
        rest = rest[1:]
    return [leaf, *rest]


def _wait_fd(fd: int, for_write: bool, timeout: float | None) -> bool:
    """Wait until ``fd`` is readable/writable (poll: no FD_SETSIZE limit)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLOUT if for_write else select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(1, int(timeout * 1000))))
    ready = select.select([], [fd], [], timeout)[1] if for_write else select.select([fd], [], [], timeout)[0]
    return bool(ready)  # pragma: no cover - platforms without poll


class _WaitingTLS:
    """An ``SSL.Connection`` whose recv/send wait on the socket instead of raising ``Want*``."""

    def __init__(self, conn: SSL.Connection):
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def _wait(self, for_write: bool, deadline: float | None) -> None:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise socket.timeout("timed out")
        if not _wait_fd(self._conn.fileno(), for_write, remaining):
            raise socket.timeout("timed out")

    def _retry(self, call, *args):
        timeout = self._conn.gettimeout()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return call(*args)
            except SSL.WantReadError:
                self._wait(False, deadline)
            except SSL.WantWriteError:
                self._wait(True, deadline)

    def recv_into(self, buffer, nbytes=None, flags=None):
        try:
            return self._retry(self._conn.recv_into, buffer, nbytes)
        except SSL.ZeroReturnError:
            return 0  # clean close_notify is EOF
        except SSL.SysCallError as ex:
            if ex.args and ex.args[0] == -1:
                return 0  # peer closed without close_notify
            raise

    def recv(self, bufsiz, flags=None):
        buffer = bytearray(bufsiz)
        return bytes(buffer[: self.recv_into(buffer, bufsiz)])

    def send(self, data, flags=0):
        return self._retry(self._conn.send, bytes(data))

    def sendall(self, data, flags=0):
        view = memoryview(bytes(data))
        while view:
            view = view[self.send(view) :]


class PeerCertAdapter(cheroot_pyopenssl.pyOpenSSLAdapter):
    """cheroot's pyOpenSSL adapter with a context built from the controller PKI."""

    def __init__(self, pki: ControllerPKI):
        super().__init__(None, None)
        self.context = server_context(pki)

    def makefile(self, sock, mode="r", bufsize=-1):
        if isinstance(sock, SSL.Connection):
            sock = _WaitingTLS(sock)
            cls = (cheroot_pyopenssl.SSLFileobjectStreamReader if "r" in mode
                   else cheroot_pyopenssl.SSLFileobjectStreamWriter)
            stream = cls(sock, mode, bufsize)
            stream.ssl_timeout = sock.gettimeout() or 10
            return stream
        return super().makefile(sock, mode, bufsize)


class PeerCertGateway(wsgi.Gateway_10):
    """WSGI gateway that sets ``environ["controller.peer_certs"]`` from the TLS connection."""

    def get_environ(self):
        env = super().get_environ()
        # APPSEC(peer-certs-from-tls): always overwritten from the connection;
        # header-derived keys are HTTP_* and can never reach this one.
        env[PEER_CERTS_KEY] = peer_chain(self.req.conn.socket)
        return env


class TLSServer:
    """The controller's HTTPS listener running in a daemon thread."""

    def __init__(self, app, host: str, port: int, pki: ControllerPKI, threads: int = 8,
                 *, timeout: float = 10, shutdown_timeout: float = 5):
        self._server = wsgi.Server((host, port), app, numthreads=threads, timeout=timeout,
                                   shutdown_timeout=shutdown_timeout)
        self._server.gateway = PeerCertGateway
        self._server.ssl_adapter = PeerCertAdapter(pki)
        self._thread: threading.Thread | None = None
        self.host = host

    @property
    def port(self) -> int:
        """The bound port (the real one when 0 was requested, once started)."""
        return self._server.bind_addr[1]

    def start(self) -> "TLSServer":
        """Bind and listen in this thread (errors surface here), then serve in a daemon thread."""
        self._server.prepare()
        self._thread = threading.Thread(target=self._server.serve, name=f"tls-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, close connections and wait for workers."""
        if self._thread is None:
            return
        self._server.stop()
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> "TLSServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
