"""HTTPS listener that hands the client's certificate chain to the WSGI app.

The controller must *request* a client certificate without verifying it in the
handshake (Go's ``RequestClientCert``) and see every certificate the client
sent: endpoints verify chains against trusted CAs, including CAs added at run
time. Python's ``ssl`` cannot (``CERT_OPTIONAL`` still aborts the handshake on an
unknown CA, and it exposes the leaf only), so TLS is pyOpenSSL with an accept-all
verify callback, over memory buffers that ``controller.server.httpserver``'s event
loop drives: a slow or silent client holds no thread, and the handshake has a
deadline. The chain reaches the app only as ``environ["controller.peer_certs"]``.
"""

from __future__ import annotations

from OpenSSL import SSL, crypto
from OpenSSL._util import ffi as _ffi
from OpenSSL._util import lib as _ssl_lib

from controller.pki.ca import ControllerPKI
from controller.server.httpserver import HTTPServer, Limits
from controller.server.wsgi_bridge import PEER_CERTS_KEY  # noqa: F401 - the key, where callers look for it

SESSION_ID_CONTEXT = b"ziti-edge-controller"
_NULL = _ffi.NULL

#: APPSEC(tls-policy): Mozilla "intermediate" without DHE: TLS 1.2 offers only ECDHE key exchange with AEAD
#: ciphers (no static RSA, no CBC, no SHA-1 MACs); TLS 1.3 suites are all AEAD and stay OpenSSL's.
#: The router's listener uses the same string (``router.tls_policy.TLS12_CIPHERS``; a test keeps them equal).
TLS12_CIPHERS = (
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
)


def _accept_any(_conn, _cert, _errno, _depth, _ok) -> bool:
    """APPSEC(request-client-cert): the handshake never judges the client cert; endpoints do."""
    return True


def server_context(pki: ControllerPKI) -> SSL.Context:
    """A TLS ≥1.2 server context (``TLS12_CIPHERS``) serving leaf + intermediate and requesting a client cert."""
    ctx = SSL.Context(SSL.TLS_SERVER_METHOD)
    ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
    ctx.set_cipher_list(TLS12_CIPHERS.encode())
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
    # An idle keep-alive connection (an SDK between two polls, 10 s apart) holds no record buffers: OpenSSL
    # frees its read and write buffers (about 34 KB) once they are empty and takes them again for the next record.
    ctx.set_mode(SSL.MODE_RELEASE_BUFFERS)
    ctx.set_session_id(SESSION_ID_CONTEXT)
    return ctx


def peer_chain_der(conn) -> tuple[bytes, ...]:
    """Leaf first, then the certificates the client sent after it (unverified), as DER."""
    if not isinstance(conn, SSL.Connection):
        return ()
    leaf = conn.get_peer_certificate()
    if leaf is None:
        return ()
    ders = [crypto.dump_certificate(crypto.FILETYPE_ASN1, cert) for cert in (leaf, *(conn.get_peer_cert_chain() or ()))]
    if len(ders) > 1 and ders[1] == ders[0]:  # server side OpenSSL omits the leaf from the chain; dropped if present
        del ders[1]
    return tuple(ders)


class TLSError(ConnectionError):
    """The TLS handshake or a record failed; the connection is closed."""


class TLSLayer:
    """Server-side TLS over memory buffers: the event loop feeds ciphertext in and writes it out."""

    def __init__(self, context: SSL.Context):
        self.conn = SSL.Connection(context, None)
        self.conn.set_accept_state()
        self.established = False
        self.closed = False

    def receive(self, data: bytes) -> bytes:
        """Feed ciphertext; return the plaintext it completes (b"" during the handshake)."""
        try:
            self.conn.bio_write(data)
            if not self.established:
                try:
                    self.conn.do_handshake()
                except SSL.WantReadError:
                    return b""
                self.established = True
            return self._read_plain()
        except SSL.Error as ex:
            raise TLSError(str(ex)) from ex

    def _read_plain(self) -> bytes:
        chunks = []
        while True:
            try:
                chunks.append(self.conn.recv(65536))
            except SSL.WantReadError:
                break
            except SSL.ZeroReturnError:  # close_notify: the client is done
                self.closed = True
                break
        return b"".join(chunks)

    def send(self, data: bytes) -> None:
        """Encrypt ``data`` into the outgoing buffer (memory buffers never block)."""
        self.conn.sendall(data)

    def outgoing(self) -> bytes:
        """Ciphertext waiting to be written to the socket."""
        chunks = []
        while True:
            try:
                chunks.append(self.conn.bio_read(65536))
            except SSL.WantReadError:
                return b"".join(chunks)

    def peer_ders(self) -> tuple[bytes, ...]:
        """The chain the client sent in this handshake (unverified), leaf first, as DER.

        A connection keeps these bytes (about 0.5 KB a certificate) rather than parsed certificates: a parsed
        certificate also keeps every extension and name the app ever read from it (4-5 KB a client after a
        certificate login), for as long as the connection lives. Each request parses its own copies.
        """
        return peer_chain_der(self.conn)

    def release_buffers(self) -> None:
        """Between requests: give back what the memory buffers grew to (call only when both are drained).

        OpenSSL's memory BIOs never shrink: each keeps room for the largest flight it carried (the handshake's
        certificates, a large answer), about 4.5 KB on an idle SDK's connection after a certificate login.
        Fresh empty ones take their place (``SSL_set_bio`` frees the old pair); the TLS state stays as it is.
        NOTE: pyOpenSSL keeps its BIOs in private attributes; without them nothing is done.
        """
        conn = self.conn
        if getattr(conn, "_into_ssl", None) is None or getattr(conn, "_from_ssl", None) is None:
            return
        into, out = _ssl_lib.BIO_new(_ssl_lib.BIO_s_mem()), _ssl_lib.BIO_new(_ssl_lib.BIO_s_mem())
        if into == _NULL or out == _NULL:
            return
        _ssl_lib.SSL_set_bio(conn._ssl, into, out)
        conn._into_ssl, conn._from_ssl = into, out

    def shutdown(self) -> None:
        """Queue a close_notify."""
        try:
            self.conn.shutdown()
        except SSL.Error:
            pass


class TLSServer(HTTPServer):
    """The controller's HTTPS listener: client certificates requested, never judged in the handshake."""

    scheme = "https"

    def __init__(
        self, app, host: str, port: int, pki: ControllerPKI, threads: int = 8, *, limits: Limits | None = None
    ):
        context = server_context(pki)
        super().__init__(app, host, port, threads=threads, limits=limits, tls=lambda: TLSLayer(context))
