"""The data plane for threaded code: socket-like connections over :class:`~harness.dataplane.DataPlane`.

with SyncDataPlane.from_identity_file("binder.json") as host, SyncDataPlane.from_identity_file("dialer.json") as guest:
    host.bind("echo", echo)
    with guest.dial("echo") as conn:
        conn.sendall(b"hello")
        assert conn.recv() == b"hello"
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Callable

from harness.client import ZitiClient
from harness.client.enroll import EnrolledIdentity
from harness.dataplane import Connection, DataPlane, DialError, flows

__all__ = ["DialError", "SyncConnection", "SyncDataPlane", "echo", "load_identity_file"]


def load_identity_file(path: str | Path) -> tuple[ZitiClient, EnrolledIdentity]:
    """A certificate-logged-in client and the identity of an SDK identity file."""
    payload = json.loads(Path(path).read_text())
    pems = {
        name: value[len("pem:") :] if value.startswith("pem:") else Path(value).read_text()
        for name, value in payload["id"].items()
    }
    identity = EnrolledIdentity(payload["ztAPI"], pems["cert"], pems["key"], pems["ca"])
    client = flows.cert_client(None, identity, url=payload["ztAPI"])
    client.login_cert()
    return client, identity


class SyncConnection:
    """A socket-like overlay connection for threads: ``sendall``, ``recv``, ``shutdown_write``, ``close``."""

    def __init__(self, conn: Connection, plane: "SyncDataPlane"):
        self._conn, self._plane = conn, plane

    def sendall(self, data: bytes) -> None:
        self._plane._call(self._conn.send(data))

    send = sendall

    def recv(self, size: int = 65536) -> bytes:
        """Up to ``size`` bytes; ``b""`` at end of stream."""
        return self._plane._call(self._conn.recv(size))

    def recv_exactly(self, size: int) -> bytes:
        return self._plane._call(self._conn.recv_exactly(size))

    def shutdown_write(self) -> None:
        """Half-close (FIN): the peer reads EOF; this side can still read."""
        self._plane._call(self._conn.close_write())

    def close(self) -> None:
        self._plane._call(self._conn.close())

    def __enter__(self) -> "SyncConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SyncDataPlane:
    """:class:`DataPlane` for threaded code, on its own event loop thread.

    Args:
        client: a client logged in with ``identity``'s certificate.
        identity: the enrolled identity (certificate, key, CA bundle).
        timeout: seconds any one operation may take.
    """

    def __init__(self, client: ZitiClient, identity: EnrolledIdentity, timeout: float = 30.0):
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ziti-dataplane", daemon=True)
        self._thread.start()
        self._plane = DataPlane(client, identity)

    @classmethod
    def from_identity_file(cls, path: str | Path) -> "SyncDataPlane":
        """Log in with an SDK identity file (``ztAPI``, ``id.cert/key/ca``)."""
        return cls(*load_identity_file(path))

    def _call(self, coro):
        if not self._loop.is_running():
            coro.close()
            raise ConnectionError("the data plane is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self.timeout)
        except TimeoutError:
            future.cancel()  # the operation ends here: nothing keeps waiting in the data plane's loop
            raise
        except asyncio.CancelledError:
            raise ConnectionError("the data plane is closed") from None

    def bind(
        self,
        service: str,
        handler: Callable[[SyncConnection], None],
        *,
        cost: int = 0,
        precedence: str = "default",
        every_router: bool = False,
    ) -> None:
        """Host ``service``: ``handler(conn)`` runs in a thread for each dial (see :meth:`DataPlane.bind`)."""

        async def run(conn: Connection) -> None:
            await asyncio.to_thread(handler, SyncConnection(conn, self))

        self._call(self._plane.bind(service, run, cost=cost, precedence=precedence, every_router=every_router))

    def dial(self, service: str) -> SyncConnection:
        """Dial ``service``; raises :class:`DialError` with the router's reason."""
        return SyncConnection(self._call(self._plane.dial(service)), self)

    def close(self) -> None:
        if self._loop.is_running():
            self._call(self._plane.close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> "SyncDataPlane":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def echo(conn: SyncConnection) -> None:
    """A bind handler that sends back what it reads until end of stream."""
    while True:
        data = conn.recv()
        if not data:
            return
        conn.sendall(data)
