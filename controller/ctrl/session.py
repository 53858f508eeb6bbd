"""One router's control channel connection: hello, requests to its ``RouterLink``, pushes, heartbeats.

The listener has already verified the router's client certificate and found the router by its
fingerprint. Here the first frame must be a hello naming :data:`~controller.ctrl.messages.VERSION`;
then each request is checked against the message table and runs on a worker thread (the
``RouterLink`` is synchronous and takes the store lock), so a slow request never stalls the
heartbeats; the quick ones of every dial (``messages.QUICK``) are answered in the loop while
the store is free and they only read. Anything hostile (a malformed frame, an unknown type or
message, bad arguments) answers an ``error`` frame where it can, logs one line and closes this
connection only.
When the connection ends, the router goes offline (unless a newer connection of the same
router has replaced this one).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from functools import partial

from controller.ctrl.frames import FrameError, encode, read_frame
from controller.ctrl.messages import MESSAGES, VERSION, InvalidArgs
from controller.store.db import NotNow

log = logging.getLogger("controller.ctrl")
#: seconds the worker answering a dial waits for its ``route`` push to be written (the loop is quick; bounded anyway)
ROUTE_WRITE_WAIT = 1.0


class Hostile(Exception):
    """The router broke the protocol: answer ``code`` and close."""

    def __init__(self, code: str, message: str, request_id=None):
        super().__init__(message)
        self.code, self.request_id = code, request_id


class RouterSession:
    """The controller's end of one router's control channel."""

    def __init__(self, listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, router: dict, link):
        self.listener, self.reader, self.writer, self.link = listener, reader, writer, link
        self.router_id, self.name = router["id"], router.get("name") or router["id"]
        self.label = f"router {self.name} ({self.router_id})"
        self.loop = asyncio.get_running_loop()
        self.last_seen = self.loop.time()
        self.closed = False
        self.went_offline = False
        self.tasks: set[asyncio.Task] = set()
        #: a ``ctrlAddresses`` push under way, and whether the members changed again meanwhile
        self._telling = self._tell_again = False

    # -- sending ---------------------------------------------------------------------
    def send(self, message: dict) -> None:
        if not self.closed:
            self.writer.write(encode(message))

    def push(self, name: str, /, **args) -> None:
        """From any thread: a push to the router (dropped once closed)."""
        if not self.closed:
            self.loop.call_soon_threadsafe(self.send, {"type": "push", "name": name, "args": args})

    def push_route(self, route: dict) -> None:
        """From whoever answers a dial (the loop, or a worker): the ``route`` push, written before this returns.
        Left to the loop alone, it would wait while a worker records the circuit (the worker keeps the
        interpreter meanwhile), and the route is what the dial waits on, not the answer."""
        if self.closed:
            return
        message = {"type": "push", "name": "route", "args": route}
        try:
            here = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            here = False
        if here:
            return self.send(message)
        written = threading.Event()

        def write() -> None:
            self.send(message)
            written.set()

        self.loop.call_soon_threadsafe(write)
        written.wait(ROUTE_WRITE_WAIT)

    def close(self, abort: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        if abort:
            self.writer.transport.abort()
        else:
            self.writer.close()

    # -- serving -----------------------------------------------------------------------
    async def serve(self) -> None:
        try:
            if await self._hello():
                self.listener.adopt(self)
                self.link.watch(lambda kind, revoked_id: self.push("revoked", kind=kind, id=revoked_id))
                self.link.watch_trusted_cas(lambda pem: self.push("trustedCas", pem=pem))
                self.link.watch_oidc_keys(lambda jwks: self.push("oidcKeys", jwks=jwks))
                self.link.watch_peers(
                    lambda peer: self.push("peerOnline", routerId=peer["router_id"], name=peer["name"], url=peer["url"])
                )
                self.link.watch_routes(self.push_route)
                self.link.watch_edge_faults(
                    lambda generation, faults: self.push("edgeFaults", generation=generation, faults=faults)
                )
                self.link.watch_removed(lambda reason: self.loop.call_soon_threadsafe(self._removed, reason))
                self.link.watch_ctrl_endpoints(lambda: self.loop.call_soon_threadsafe(self._tell_ctrl_endpoints))
                self._tell_ctrl_endpoints()
                heartbeat = asyncio.create_task(self._heartbeat())
                try:
                    await self._loop()
                finally:
                    heartbeat.cancel()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            if not self.closed:
                log.info("ctrl: %s disconnected", self.label)
        except asyncio.TimeoutError:
            log.warning("ctrl: %s sent no hello in %g s, closing", self.label, self.listener.hello_timeout)
        except FrameError as ex:
            log.warning("ctrl: %s sent a malformed frame (%s), closing", self.label, ex)
        except Hostile as ex:
            log.warning("ctrl: %s: %s, closing", self.label, ex)
            self.send({"type": "error", "id": ex.request_id, "code": ex.code, "message": str(ex)})
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one router's failure must not stop the listener
            log.exception("ctrl: %s failed, closing", self.label)
        finally:
            self.close()
            await self._gone()

    async def _hello(self) -> bool:
        hello = await asyncio.wait_for(read_frame(self.reader), self.listener.hello_timeout)
        if hello["type"] != "hello":
            raise Hostile("EXPECTED_HELLO", f"expected hello, got {hello['type'][:40]!r}")
        if hello.get("version") != VERSION:
            raise Hostile("UNSUPPORTED_VERSION", f"protocol version {hello.get('version')!r} is not {VERSION}")
        self.send(
            {
                "type": "hello",
                "version": VERSION,
                "routerId": self.router_id,
                "name": self.name,
                "heartbeatSeconds": self.listener.heartbeat_seconds,
                "ctrlId": self.link.instance_id,
            }
        )
        log.info("ctrl: %s connected", self.label)
        return True

    async def _loop(self) -> None:
        while not self.closed:
            message = await read_frame(self.reader)
            self.last_seen = self.loop.time()
            kind = message["type"]
            if kind == "request":
                self._request(message)
            elif kind == "ping":
                self.send({"type": "pong"})
            elif kind != "pong":
                raise Hostile("UNKNOWN_TYPE", f"unknown frame type {kind[:40]!r}")

    def _request(self, message: dict) -> None:
        request_id, name = message.get("id"), message.get("name")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            raise Hostile("INVALID_REQUEST", "a request needs an integer id")
        entry = MESSAGES.get(name) if isinstance(name, str) else None
        if entry is None:
            raise Hostile("UNKNOWN_MESSAGE", f"unknown message {str(name)[:40]!r}", request_id)
        try:
            args = entry.check(message.get("args", {}))
        except InvalidArgs as ex:
            raise Hostile("INVALID_ARGS", str(ex), request_id) from None
        if entry.quick and self._answer_now(entry, args, request_id):
            return
        task = self.loop.create_task(self._run(entry, args, request_id))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _answer_now(self, entry, args: dict, request_id: int) -> bool:
        """A quick request answered here in the loop (``RouterLink.now``); False when the store is busy or the
        request would write: nothing was done, a worker answers it."""
        try:
            result = self.link.now(partial(entry.call, self.link, args, self.router_id))
        except NotNow:
            return False
        except Exception as ex:  # noqa: BLE001 - as on a worker: the request fails, nothing else
            self._failed(entry, request_id, ex)
        else:
            self.send({"type": "reply", "id": request_id, "result": result})
        return True

    async def _run(self, entry, args: dict, request_id: int) -> None:
        try:
            result = await asyncio.to_thread(entry.call, self.link, args, self.router_id)
        except Exception as ex:  # noqa: BLE001 - e.g. the service went meanwhile: that request fails, nothing else
            return self._failed(entry, request_id, ex)
        if entry.name == "offline":
            self.went_offline = True
        self.send({"type": "reply", "id": request_id, "result": result})

    def _failed(self, entry, request_id: int, ex: Exception) -> None:
        """A request's failure: the router is told why (a refusal, no route) or that the controller failed; bad
        arguments found late close the channel."""
        if isinstance(ex, InvalidArgs):
            log.warning("ctrl: %s: %s, closing", self.label, ex)
            self.send({"type": "error", "id": request_id, "code": "INVALID_ARGS", "message": str(ex)})
            return self.close()
        if isinstance(ex, PermissionError):
            error = {"code": "REFUSED", "message": str(ex)}
        elif isinstance(ex, KeyError):  # a bug: logged, the router told only that the controller failed
            log.warning("ctrl: %s: %s failed: %r", self.label, entry.name, ex)
            error = {"code": "FAILED", "message": "the controller failed"}
        elif isinstance(ex, LookupError):
            error = {"code": "NO_ROUTE", "message": str(ex)}  # the dialer is told why (no terminator, no path)
        else:
            log.warning("ctrl: %s: %s failed: %s", self.label, entry.name, ex)
            error = {"code": "FAILED", "message": str(ex) or type(ex).__name__}
        self.send({"type": "reply", "id": request_id, "error": error})

    def _tell_ctrl_endpoints(self) -> None:
        """In a cluster: push every member's control channel address (``ctrlAddresses``), read off the loop (it
        takes the store lock); at connect and whenever the members or this member's leadership change."""
        if self.closed or self._telling:
            self._tell_again = not self.closed
            return
        self._telling = True

        async def tell() -> None:
            try:
                while True:
                    self._tell_again = False
                    endpoints = await asyncio.to_thread(self.link.ctrl_endpoints)
                    if endpoints is not None and endpoints["controllers"]:
                        self.send({"type": "push", "name": "ctrlAddresses", "args": endpoints})
                    if not self._tell_again:
                        return
            finally:
                self._telling = False

        task = self.loop.create_task(tell())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _removed(self, reason: str) -> None:
        """Deleted or disabled while connected: tell the router, close; it goes offline (and cannot return)."""
        if not self.closed:
            log.warning("ctrl: %s: %s, closing its control channel", self.label, reason)
            self.send({"type": "error", "code": "ROUTER_REMOVED", "message": reason})
            self.close()

    async def _heartbeat(self) -> None:
        interval, timeout = self.listener.heartbeat_seconds, self.listener.heartbeat_timeout
        while not self.closed:
            await asyncio.sleep(interval)
            silent = self.loop.time() - self.last_seen
            if silent > timeout:
                log.warning("ctrl: %s answered no heartbeat for %.1f s, closing", self.label, silent)
                return self.close(abort=True)
            self.send({"type": "ping"})

    async def _gone(self) -> None:
        """The connection ended: the router is offline unless a newer connection replaced this one."""
        for task in list(self.tasks):
            task.cancel()
        if self.listener.release(self) and not self.went_offline:
            await asyncio.to_thread(self.link.disconnected)
        else:
            self.link.unwatch()
