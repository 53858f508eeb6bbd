"""What one idle TLS client connection costs the controller, part by part (glibc's ``mallinfo2``, in this process).

Run: ``python -m benchmarks.connection_memory`` (also printed by ``--only fleet``).

Each figure is the heap growth per connection while ``COUNT`` of them are held, after a handshake and one poll-sized
request and answer, as an SDK's connection sits between two polls: the controller's own TLS layer
(``controller.server.tls.TLSLayer``, pyOpenSSL over memory buffers) with and without a client certificate, TLS 1.3
and 1.2, with its memory buffers released (as the server does) and kept; the bare ``SSL`` object of the OpenSSL
pyOpenSSL links, and for reference of the system OpenSSL the standard library links (which cannot request a client
certificate without judging it in the handshake, see ``controller.server.tls``). The rest of a connection (asyncio's
transport and socket, the HTTP parser, ``Connection``) and what the app keeps per SDK are in the fleet figures.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import ssl
import tempfile
from pathlib import Path

COUNT = 300
REQUEST = b"GET /edge/client/v1/current-api-session/service-updates HTTP/1.1\r\nHost: c\r\nAuthorization: Bearer "
REQUEST += b"e" * 900 + b"\r\n\r\n"
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n" + b"{}" * 32


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


def _heap_meter():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2

    def used() -> int:
        gc.collect()
        info = mallinfo2()
        return info.uordblks + info.hblkhd

    return used


def _per_item_kib(used, make) -> float:
    make()  # first-use allocations (method tables, error strings) are not the connection's
    before = used()
    held = [make() for _ in range(COUNT)]
    grown = used() - before
    del held
    return grown / COUNT / 1024


def main(quick: bool = False) -> dict:
    from OpenSSL import SSL
    from OpenSSL._util import ffi
    from OpenSSL._util import lib as ssl_lib

    from controller.pki import ControllerPKI
    from controller.server.tls import TLSLayer, server_context
    from harness.client import pki as hp

    used = _heap_meter()
    if used is None:
        return {"connection memory": "skipped: needs glibc (mallinfo2)"}
    folder = Path(tempfile.mkdtemp(prefix="bench-connmem-"))
    pki = ControllerPKI.load_or_create(folder / "pki")
    context = server_context(pki)
    root = hp.make_root_ca("connection memory CA")
    leaf = hp.make_leaf(root, "sdk")
    (folder / "client.pem").write_text(leaf.cert_pem + leaf.key_pem)

    def client_context(with_cert: bool, version: ssl.TLSVersion) -> ssl.SSLContext:
        made = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        made.check_hostname, made.verify_mode = False, ssl.CERT_NONE
        made.maximum_version = version
        if with_cert:
            made.load_cert_chain(folder / "client.pem")
        return made

    def connection(client: ssl.SSLContext, release: bool):
        layer = TLSLayer(context)
        inbound, outbound = ssl.MemoryBIO(), ssl.MemoryBIO()
        sdk = client.wrap_bio(inbound, outbound, server_hostname="localhost")
        for _ in range(10):
            try:
                sdk.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            layer.receive(outbound.read())
            inbound.write(layer.outgoing())
        sdk.write(REQUEST)
        assert layer.receive(outbound.read()) == REQUEST
        ders = layer.peer_ders()
        layer.send(ANSWER)
        inbound.write(layer.outgoing())
        assert sdk.read(len(ANSWER)) == ANSWER
        if release:
            layer.release_buffers()
        return layer, ders

    figures: dict = {}
    version = ffi.string(ssl_lib.OpenSSL_version(0)).decode().split()[1]
    figures[f"TLS: SSL object alone, pyOpenSSL's OpenSSL {version} (KiB)"] = round(
        _per_item_kib(used, lambda: SSL.Connection(context, None)), 1
    )
    system = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    figures[f"TLS: SSL object alone, the ssl module's {ssl.OPENSSL_VERSION} (KiB)"] = round(
        _per_item_kib(used, lambda: system.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_side=True)), 1
    )
    for name, tls_version in (("1.3", ssl.TLSVersion.TLSv1_3), ("1.2", ssl.TLSVersion.TLSv1_2)):
        for with_cert in (False, True):
            client = client_context(with_cert, tls_version)
            cert = "client cert" if with_cert else "no client cert"
            kept = _per_item_kib(used, lambda client=client: connection(client, False))
            released = _per_item_kib(used, lambda client=client: connection(client, True))
            figures[f"TLS {name}, {cert}: idle connection KiB (buffers kept -> released)"] = (
                f"{kept:.1f} -> {released:.1f}"
            )
    return figures


if __name__ == "__main__":
    for key, value in main().items():
        print(f"  {key:<72} {value}")
