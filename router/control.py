"""``RemoteControllerLink``: the router's :class:`~router.controller_link.ControllerLink` over the control channel.

A router running as its own process reaches the controller only here: one mutual-TLS connection
(the router's enrolled client certificate; the controller's certificate checked against the CA
bundle enrollment stored) carrying length-prefixed JSON frames (``docs/control-channel.md``).
The connection lives in an event loop of its own thread, or in the one it is lent (``loop=``: a router process
runs its control channels and its edge in one loop, so a push is handled where it arrives); the interface's
synchronous calls wait for their reply there from other threads, the quick notifications (``connection_changed``,
``emit``) do not wait.

The controller pings; a controller silent for three heartbeats, or a dropped connection, makes
the link reconnect with backoff and, once back, report the router online again and re-create the
terminators of its live bindings, so the controller's view matches the router's.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures  # noqa: F401  (named in annotations)
import itertools
import logging
import ssl
import threading
import time
from typing import Any, Callable, Mapping

import orjson

import protocol
from protocol import VERSION, Caller, Terminator, encode
from router import tls_transport
from router.channel import loop_on_thread, running_in, stop_loop_thread, within
from router.controller_link import Watchers
from router.local_tokens import LocalTokens
from router.tls_policy import new_context

log = logging.getLogger("router.control")
#: what this router reports of itself at every reconcile
BACKOFF = (0.1, 0.2, 0.5, 1.0, 2.0)
#: notifications whose answer is awaited at most (the oldest are forgotten past it)
MAX_NOTES = 10_000


class ControlError(ConnectionError):
    """The controller cannot be reached, or refused the control channel."""


async def read_frame(reader: asyncio.StreamReader) -> dict:
    try:
        return await protocol.read_frame(reader)
    except protocol.FrameError as ex:
        raise ControlError(f"the controller sent a malformed frame ({ex})") from None


class AcceptedHellos:
    """SDK hellos the controller accepted: ``(token, certificate fingerprint)`` -> the caller it answered.

    Kept so the router answers a hello while its controller is away (an SDK reconnecting its channel). An OIDC
    access token counts until its ``exp`` (the controller verified its signature when it accepted it); a legacy
    token for ``LEGACY_SECONDS`` after the controller last accepted it (its API session's default idle timeout).
    A revoked API session's entries go at once. At most ``limit`` entries (the oldest go first).
    """

    LEGACY_SECONDS = 1800.0

    def __init__(self, limit: int = 100_000, clock: Callable[[], float] = time.time):
        self.limit, self.clock = limit, clock
        self._entries: dict[tuple[str, str], tuple[dict, float]] = {}
        self._lock = threading.Lock()

    def add(self, token: str, fingerprint: str, caller: dict) -> None:
        until = _jwt_exp(token) or self.clock() + self.LEGACY_SECONDS
        with self._lock:
            self._entries.pop((token, fingerprint), None)
            if len(self._entries) >= self.limit:
                del self._entries[next(iter(self._entries))]
            self._entries[(token, fingerprint)] = (dict(caller), until)

    def get(self, token: str, fingerprint: str) -> dict | None:
        with self._lock:
            entry = self._entries.get((token, fingerprint))
            if entry is None:
                return None
            if self.clock() >= entry[1]:
                del self._entries[(token, fingerprint)]
                return None
            return dict(entry[0])

    def forget(self, token: str, fingerprint: str) -> None:
        with self._lock:
            self._entries.pop((token, fingerprint), None)

    def revoke(self, api_session_id: str) -> None:
        with self._lock:
            for key in [
                k for k, (caller, _) in self._entries.items() if caller.get("api_session_id") == api_session_id
            ]:
                del self._entries[key]


def _jwt_exp(token: str) -> float | None:
    """The ``exp`` of a JWT's payload (read, not verified: only for a token the controller accepted), else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def parse_address(address: str) -> tuple[str, int]:
    """``tls:host:port`` (the real ctrl address form) or ``host:port``."""
    rest = address[4:] if address.startswith("tls:") else address
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{address!r} is not a control channel address (tls:HOST:PORT)")
    return host.strip("[]"), int(port)


def client_context(cert_pem: str, key_pem: str, ca_pem: str) -> ssl.SSLContext:
    import tempfile
    from pathlib import Path

    context = new_context(ssl.PROTOCOL_TLS_CLIENT)
    with tempfile.TemporaryDirectory(prefix="ziti-router-ctrl-") as folder:
        cert, key = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        cert.write_text(cert_pem)
        key.touch(mode=0o600)
        key.write_text(key_pem)
        context.load_cert_chain(cert, key)
    context.load_verify_locations(cadata=ca_pem)
    context.set_alpn_protocols(["ziti-ctrl"])
    return context


class RemoteControllerLink(Watchers):
    """The controller at ``address``, reached with the router's client ``cert_pem``/``key_pem``."""

    def __init__(
        self,
        address: str,
        *,
        cert_pem: str,
        key_pem: str,
        server_cert_pem: str,
        ca_pem: str,
        request_timeout: float = 10.0,
        loop: asyncio.AbstractEventLoop | None = None,
    ):
        """``loop``: a running event loop to live in (its owner stops it), instead of a thread and loop of its own."""
        self.host, self.port = parse_address(address)
        self.address = address
        self.server_cert_pem, self.key_pem, self.request_timeout = server_cert_pem, key_pem, request_timeout
        #: the enrolled client certificate and the controller CA also carry links to other routers
        self.cert_pem, self.ca_pem = cert_pem, ca_pem
        self._context = client_context(cert_pem, key_pem, ca_pem)
        self.router_id = self.name = ""
        #: the controller's instance id (its hello says; a cluster member's id)
        self.ctrl_id = ""
        self.heartbeat_seconds = 1.0
        self._ids = itertools.count(1)
        self._waiters: dict[int, asyncio.Future] = {}
        #: notifications written and not answered yet: request id -> name (the answer is only checked for an error)
        self._notes: dict[int, str] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._faults_changed: Callable[[int, list], None] | None = None
        #: ``fn(self, args)`` of a ``ctrlAddresses`` push (``router.members``): a cluster's member list
        self.members_changed: Callable[["RemoteControllerLink", dict], None] | None = None
        #: the router's whole state at a reconnect (a future of :meth:`EdgeRouter.state`) and what applies the answer
        self._link_url: str | None = None
        #: the edge faults the controller pushed last, and their generation (a push may come before the watch)
        self._edge_faults: tuple[int, list] = (0, [])
        self._online_url: str | None = None
        self._online_version: dict[str, str] = {}
        self._terminators: dict[str, Terminator] = {}
        #: held while the state is reported and reconciled (``router.members`` holds it while it writes terminators
        #: through another member, so a reconcile never judges a terminator added meanwhile stale)
        self.state_lock: threading.Lock | None = None
        self._closing = False
        self.loop: asyncio.AbstractEventLoop | None = loop
        self._owns_loop = loop is None
        self._thread: threading.Thread | None = None
        self._maintainer: concurrent.futures.Future | None = None
        #: this channel's serving task (its reader), cancelled at close when the loop is lent
        self._serving: asyncio.Future | None = None
        #: what the controller accepted at SDK hellos, so a hello while it is away is still answered
        self.accepted = AcceptedHellos()
        #: OIDC access tokens verified here while the controller is away (keys and revocations it pushed)
        self.local_tokens = LocalTokens()
        #: set while a hello-ed connection is up (tests and readiness wait on it)
        self.connected = threading.Event()

    # -- lifecycle ------------------------------------------------------------------
    def _start_loop(self) -> None:
        if self._owns_loop:
            self.loop, self._thread = loop_on_thread("router-ctrl")

    def connect(self, timeout: float = 10.0) -> "RemoteControllerLink":
        """Open the control channel (hello included); ``ControlError`` when that fails."""
        self._start_loop()
        opening = asyncio.run_coroutine_threadsafe(self._open(), self.loop)
        try:
            opening.result(timeout)
        except BaseException as ex:
            opening.cancel()
            self._stop_loop()
            if isinstance(ex, ControlError):
                raise
            if isinstance(ex, TimeoutError):
                raise ControlError(f"the controller at {self.address} did not answer within {timeout:g} s") from None
            raise ControlError(f"cannot reach the controller at {self.address}: {ex}") from None
        self._maintainer = asyncio.run_coroutine_threadsafe(self._maintain(), self.loop)
        return self

    def start(self) -> "RemoteControllerLink":
        """Connect in the background (with backoff, until :meth:`close`), then serve as :meth:`connect` does;
        once connected, report the router's whole state (``reconcile``) if it is online already. How a router
        reaches the other members of a cluster (``router.members``)."""
        self._start_loop()
        self._maintainer = asyncio.run_coroutine_threadsafe(self._connect_and_maintain(), self.loop)
        return self

    async def _connect_and_maintain(self) -> None:
        for attempt in itertools.count():
            if self._closing:
                return
            try:
                await self._open()
                break
            except (ControlError, OSError, asyncio.TimeoutError) as ex:
                log.debug("router: connecting to %s: %s", self.address, ex)
            await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
        await self._maintain(resync=True, first=True)

    def reconcile_now(self, timeout: float | None = None) -> None:
        """Send the router's whole state now (``reconcile``), as after a reconnect; ``ControlError`` if not
        connected."""
        if self.loop is None or not self.loop.is_running() or not self.connected.is_set():
            raise ControlError("not connected to the controller")
        future = asyncio.run_coroutine_threadsafe(self._resync(), self.loop)
        future.result(timeout or self.request_timeout + 1)

    def close(self) -> None:
        """Stop reconnecting and close the channel."""
        self._closing = True
        if self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self._abort)
        self._stop_loop()

    def _stop_loop(self) -> None:
        """Its own loop stops; in a lent loop, this channel's tasks end (and what waits on a reply is told)."""
        if not self._owns_loop:
            if self._maintainer is not None:
                self._maintainer.cancel()
            if self.loop is not None and self.loop.is_running():
                self.loop.call_soon_threadsafe(self._end_tasks)
            return
        stop_loop_thread(self.loop, self._thread)  # the reader and the reconnect loop end first

    def _abort(self) -> None:
        if self._writer is not None:
            self._writer.transport.abort()

    def _end_tasks(self) -> None:
        self._abort()
        if self._serving is not None:
            self._serving.cancel()
        self._fail_waiters()

    def _fail_waiters(self) -> None:
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.set_exception(ControlError("the control channel closed"))
        self._waiters.clear()
        if self._notes:
            log.info("router: %d notifications not answered before the control channel closed", len(self._notes))
            self._notes.clear()

    async def _open(self) -> None:
        try:
            reader, writer = await tls_transport.connect(
                self.host, self.port, self._context, server_hostname=self.host, timeout=10
            )
        except ssl.SSLError as ex:
            raise ControlError(f"TLS with the controller at {self.address} failed: {ex.reason or ex}") from None
        except TimeoutError:
            raise ControlError(f"the controller at {self.address} did not finish the TLS handshake in 10 s") from None
        except OSError as ex:
            raise ControlError(f"cannot reach the controller at {self.address}: {ex.strerror or ex}") from None
        writer.write(encode({"type": "hello", "version": VERSION}))
        try:
            reply = await asyncio.wait_for(read_frame(reader), 10)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            writer.transport.abort()
            raise ControlError(f"the controller at {self.address} closed the control channel at hello") from None
        if reply.get("type") != "hello":
            writer.close()
            raise ControlError(f"the controller refused the control channel: {reply.get('message', reply)}")
        self.router_id, self.name = str(reply["routerId"]), str(reply.get("name") or reply["routerId"])
        self.heartbeat_seconds = float(reply.get("heartbeatSeconds") or 1.0)
        self.ctrl_id = str(reply.get("ctrlId") or "")
        self._reader, self._writer = reader, writer
        self.connected.set()

    async def _maintain(self, resync: bool = False, first: bool = False) -> None:
        """Serve the connection; when it drops, reconnect and re-sync until closed (``resync``: at once too;
        ``first``: this is the channel's first connection)."""
        while not self._closing:
            serving = self._serving = asyncio.ensure_future(self._serve())
            if resync:  # replies are read by _serve meanwhile
                try:
                    await self._resync()
                    log.info("router: the control channel to %s is %s", self.address, "up" if first else "back")
                    first = False
                except Exception as ex:  # noqa: BLE001 - whatever failed, the channel reconnects (never dies)
                    log.warning("router: re-syncing with the controller failed (%s), reconnecting", ex)
                    self._abort()
            await serving
            self.connected.clear()
            if self._edge_faults[1]:  # no fault without the controller timing it; it re-sends them at reconnect
                self._edge_faults = (0, [])
                if self._faults_changed is not None:
                    self._faults_changed(*self._edge_faults)
            self._fail_waiters()
            if self._closing:
                return
            log.warning("router: the control channel to %s closed, reconnecting", self.address)
            for attempt in itertools.count():
                await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
                if self._closing:
                    return
                try:
                    await self._open()
                    resync = True
                    break
                except (ControlError, OSError, asyncio.TimeoutError) as ex:
                    log.debug("router: reconnecting to %s: %s", self.address, ex)

    async def _serve(self) -> None:
        """Frames are handled as TLS delivers them (:class:`ControlFrames`) until the connection ends or the
        controller is silent for three heartbeats."""
        reader, writer, loop = self._reader, self._writer, asyncio.get_running_loop()
        frames = ControlFrames(self._dispatch, bytes(reader._buffer))  # what came with the hello's answer
        reader._buffer.clear()
        writer.transport.set_protocol(frames)
        silence = 3 * self.heartbeat_seconds + 1
        try:
            frames.parse()
            if reader.at_eof() or reader.exception() is not None:  # it ended before the frames were handed over
                frames.connection_lost(reader.exception())
            while not frames.done.done():
                idle = loop.time() - frames.last_seen
                if idle >= silence:
                    log.warning("router: the controller sent nothing for %.1f s", silence)
                    break
                await asyncio.wait([frames.done], timeout=silence - idle)
        finally:
            writer.transport.abort()

    async def _resync(self) -> None:
        """After a reconnect: the router's whole state in one ``reconcile`` (the controller takes what it lacks and
        answers what this router must drop), then the trusted CAs."""
        lock = self.state_lock
        while lock is not None and not lock.acquire(blocking=False):  # cancellable: never a lock left held
            await asyncio.sleep(0.005)
        try:
            await self._reconcile()
        finally:
            if lock is not None:
                lock.release()
        if self._cas_changed is not None:
            self._cas_changed(await self._request("trustedCas", {}))

    async def _reconcile(self) -> None:
        if self._online_url is not None:
            state = await asyncio.wrap_future(self._report()) if self._report is not None else {}
            channels = state.get("channels", [])
            answer = await self._request(
                "reconcile",
                {
                    "url": self._online_url,
                    "linkUrl": self._link_url,
                    "terminators": [t.to_wire() for t in state.get("terminators", self._terminators.values())],
                    "links": [
                        {"linkId": link["link_id"], "routerId": link["router_id"], "dialed": link["dialed"]}
                        for link in state.get("links", [])
                    ],
                    "channels": [{"token": token, "fingerprint": fp} for token, fp in channels],
                    "versionInfo": self._online_version,
                },
            )
            log.info("router: reconnected to the controller at %s: %s", self.address, answer.get("summary", ""))
            if self._reconciled is not None:
                self._reconciled(answer)

    def _dispatch(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "reply":
            waiter = self._waiters.pop(message.get("id"), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)
            elif waiter is None and (name := self._notes.pop(message.get("id"), None)) and message.get("error"):
                error = message["error"]
                log.info(
                    "router: the controller failed %s (%s)",
                    name,
                    error.get("message") if isinstance(error, dict) else error,
                )
        elif kind == "ping":
            self._writer.write(encode({"type": "pong"}))
        elif kind == "push":
            self._push(message.get("name"), message.get("args") or {})
        elif kind == "error":
            log.warning("router: the controller closed the control channel: %s", message.get("message"))

    def _push(self, name: str, args: dict) -> None:
        handler = PUSHES.get(name)
        if handler is not None:
            handler(self, args)  # a failure is one line (ControlFrames), never the channel's end

    def _on_revoked(self, args: dict) -> None:
        if args.get("kind") == "apiSession":
            self.accepted.revoke(str(args.get("id")))
        self.local_tokens.revoke(str(args.get("kind")), str(args.get("id")))
        if self._revoked is not None:
            self._revoked(str(args.get("kind")), str(args.get("id")))

    def _on_trusted_cas(self, args: dict) -> None:
        if self._cas_changed is not None and isinstance(args.get("pem"), str):
            self._cas_changed(args["pem"])

    def _on_edge_faults(self, args: dict) -> None:
        if isinstance(args.get("faults"), list) and isinstance(args.get("generation"), int):
            self._edge_faults = (args["generation"], args["faults"])
            if self._faults_changed is not None:
                self._faults_changed(*self._edge_faults)

    def _on_oidc_keys(self, args: dict) -> None:
        if isinstance(args.get("jwks"), dict):
            self.local_tokens.set_keys(args["jwks"])

    def _on_peer_online(self, args: dict) -> None:
        if self._peer_returned is not None and all(isinstance(args.get(k), str) for k in ("routerId", "url")):
            self._peer_returned(
                {"router_id": args["routerId"], "name": str(args.get("name") or ""), "url": args["url"]}
            )

    def _on_route(self, args: dict) -> None:
        if self._routed is not None:
            self._routed(args)

    def _on_ctrl_addresses(self, args: dict) -> None:
        if self.members_changed is not None and isinstance(args.get("controllers"), list):
            self.members_changed(self, args)

    # -- requests -------------------------------------------------------------------------
    def _write_request(self, name: str, args: dict) -> int | None:
        """The request's frame, written now (in the channel's loop); its id, or None when not connected."""
        if self._writer is None or not self.connected.is_set():
            return None
        request_id = next(self._ids)
        self._writer.write(encode({"type": "request", "id": request_id, "name": name, "args": args}))
        return request_id

    async def _request(self, name: str, args: dict) -> Any:
        request_id = self._write_request(name, args)
        if request_id is None:
            raise ControlError("not connected to the controller")
        waiter = self._waiters[request_id] = asyncio.get_running_loop().create_future()
        try:
            reply = await within(waiter, self.request_timeout)
        except asyncio.TimeoutError:
            raise ControlError(f"the controller did not answer {name} within {self.request_timeout:g} s") from None
        finally:
            self._waiters.pop(request_id, None)
        error = reply.get("error")
        if error is None:
            return reply.get("result")
        if error.get("code") == "REFUSED":
            raise PermissionError(error.get("message") or "refused")
        if error.get("code") == "NO_ROUTE":
            raise LookupError(error.get("message") or "no route")
        raise RuntimeError(error.get("message") or "the controller failed")

    def _call(self, name: str, **args) -> Any:
        if self.loop is None or not self.loop.is_running():
            raise ControlError("not connected to the controller")
        return asyncio.run_coroutine_threadsafe(self._request(name, args), self.loop).result(self.request_timeout + 1)

    def _notify(self, name: str, **args) -> None:
        """Send without waiting for the answer (from any thread); one line at info when it is not delivered or the
        controller failed it. In the channel's loop the frame is written at once: no task, no timer."""
        if self.loop is None or not self.loop.is_running():
            return
        if self.here():
            self._notify_here(name, args)
        else:
            self.loop.call_soon_threadsafe(self._notify_here, name, args)

    def _notify_here(self, name: str, args: dict) -> None:
        request_id = self._write_request(name, args)
        if request_id is None:
            log.info("router: %s not delivered to the controller (not connected)", name)
            return
        self._notes[request_id] = name
        if len(self._notes) > MAX_NOTES:  # a controller that stopped answering: the oldest are forgotten
            del self._notes[next(iter(self._notes))]

    def here(self) -> bool:
        """Called in this channel's loop (the router's own, when it lent it)."""
        return running_in(self.loop)

    def _checked(self, name: str, **args) -> Any:
        """A call whose refusal the SDK is told; an unreachable controller is a refusal too."""
        try:
            return self._call(name, **args)
        except (ControlError, TimeoutError, RuntimeError) as ex:
            raise refusal(ex) from None

    # -- ControllerLink ---------------------------------------------------------------------
    def credentials(self) -> dict:
        return {
            "router_id": self.router_id,
            "name": self.name,
            "cert_chain_pem": self.server_cert_pem,
            "key_pem": self.key_pem,
            "client_cert_chain_pem": self.cert_pem,
            "client_key_pem": self.key_pem,
            "ca_pem": self.ca_pem,
        }

    def trusted_cas(self) -> str:
        return self._call("trustedCas")

    def hello(self, token: str, fingerprint: str) -> dict:
        """The controller's answer; while it is unreachable, what it answered for this token and certificate
        before (until the token expires or its API session is revoked)."""
        try:
            caller = self._call("hello", token=token, fingerprint=fingerprint)
        except RuntimeError as ex:
            raise PermissionError(f"the controller failed: {ex}") from None
        except (ControlError, TimeoutError) as ex:
            caller = self.accepted.get(token, fingerprint) or self.local_tokens.caller(token, fingerprint)
            if caller is None:
                raise PermissionError(f"the controller is unreachable ({ex})") from None
            log.info("router: the controller is unreachable; an SDK hello accepted as the controller did before")
            return caller
        except PermissionError:
            self.accepted.forget(token, fingerprint)
            raise
        self.accepted.add(token, fingerprint, caller)
        return caller

    def session(self, caller: Caller, token: str, kind: str) -> dict:
        return self._checked("session", caller=caller.to_wire(), token=token, kind=kind)

    def add_terminator(self, terminator: Terminator) -> None:
        self._terminators[terminator.terminator_id] = terminator
        try:
            self._call("addTerminator", **terminator.to_wire())
        except BaseException:
            self._terminators.pop(terminator.terminator_id, None)
            raise

    def remove_terminator(self, terminator_id: str) -> None:
        self._terminators.pop(terminator_id, None)
        try:
            self._call("removeTerminator", terminatorId=terminator_id)
        except (ControlError, RuntimeError, TimeoutError) as ex:
            log.info("router: terminator %s not removed on the controller now (%s)", terminator_id, ex)

    def online(self, url: str, version_info: Mapping[str, str] | None = None) -> None:
        self._online_url, self._online_version = url, dict(version_info or {})
        self._call("online", url=url, versionInfo=self._online_version)

    def offline(self) -> None:
        self._online_url = None
        try:
            self._call("offline")
        except (ControlError, RuntimeError, TimeoutError) as ex:
            log.info("router: could not report offline (%s)", ex)

    def watch_edge_faults(self, changed: Callable[[int, list], None]) -> None:
        self._faults_changed = changed
        if self.loop is not None and self.loop.is_running():  # in the channel's thread, so pushes stay in order
            self.loop.call_soon_threadsafe(lambda: changed(*self._edge_faults))
        else:
            changed(*self._edge_faults)

    def edge_fault_hits(self, generation: int, hits: dict[str, int]) -> None:
        self._notify("edgeFaultHits", generation=generation, hits=dict(hits))

    def connection_changed(self, identity_id: str, connected: bool) -> None:
        self._notify("connectionChanged", identityId=identity_id, connected=connected)

    def emit(self, namespace: str, event_type: str, **fields) -> None:
        fields = {key: value for key, value in fields.items() if key != "router_id"}
        self._notify("emit", namespace=namespace, eventType=event_type, fields=fields)

    # -- links and circuits ---------------------------------------------------------------
    def link_listen(self, url: str) -> None:
        self._link_url = url
        self._call("linkListen", url=url)

    def peers(self) -> list[dict]:
        return self._call("peers")

    def link_peer(self, router_id: str, fingerprint: str) -> dict:
        return self._checked("linkPeer", routerId=router_id, fingerprint=fingerprint)

    def link_up(self, link_id: str, dst_router_id: str) -> None:
        self._call("linkUp", linkId=link_id, dstRouterId=dst_router_id)

    def link_latency(self, link_id: str, latency_ns: int) -> None:
        self._notify("linkLatency", linkId=link_id, latencyNs=int(latency_ns))

    def link_down(self, link_id: str) -> None:
        self._notify("linkDown", linkId=link_id)

    def dial(self, caller: Caller, token: str, instance_id: str, dialer_key: bool, headers=None) -> dict:
        return self._checked("dial", **protocol.dial_args(caller, token, instance_id, dialer_key, headers))

    async def dial_async(self, caller: Caller, token: str, instance_id: str, dialer_key: bool, headers=None) -> dict:
        """:meth:`dial`, awaited in this channel's loop (the router's: no worker thread); elsewhere on a worker."""
        if not self.here():
            return await asyncio.to_thread(self.dial, caller, token, instance_id, dialer_key, headers)
        try:
            return await self.dial_request(caller, token, instance_id, dialer_key, headers)
        except (ControlError, RuntimeError) as ex:
            raise refusal(ex) from None

    async def dial_request(self, caller: Caller, token: str, instance_id: str, dialer_key: bool, headers=None) -> dict:
        """The ``dial`` request, in this channel's loop: ``ControlError`` when it was not answered (another member
        may be asked), ``RuntimeError`` when the controller failed it."""
        return await self._request("dial", protocol.dial_args(caller, token, instance_id, dialer_key, headers))

    def circuit_down(self, circuit: dict) -> None:
        self._notify("circuitDown", circuit=dict(circuit))


#: controller pushes, by name: each handler beside the others above
PUSHES: dict[str, Callable[[RemoteControllerLink, dict], None]] = {
    "revoked": RemoteControllerLink._on_revoked,
    "trustedCas": RemoteControllerLink._on_trusted_cas,
    "edgeFaults": RemoteControllerLink._on_edge_faults,
    "peerOnline": RemoteControllerLink._on_peer_online,
    "oidcKeys": RemoteControllerLink._on_oidc_keys,
    "ctrlAddresses": RemoteControllerLink._on_ctrl_addresses,
    "route": RemoteControllerLink._on_route,
}


class ControlFrames(asyncio.Protocol):
    """The control channel's frames, each handed to ``on_frame`` in ``data_received`` as TLS delivers it: no task and
    no loop turn per frame. A malformed frame ends the connection (it reconnects)."""

    def __init__(self, on_frame: Callable[[dict], None], leftover: bytes = b""):
        self.on_frame, self.parser = on_frame, protocol.FrameParser(leftover)
        loop = asyncio.get_running_loop()
        self.done, self.last_seen = loop.create_future(), loop.time()

    def parse(self, data: bytes = b"") -> None:
        """Take ``data`` (none: what came before this protocol was set) and hand on every complete frame."""
        if self.done.done():  # ended (a malformed frame): what still arrives is dropped with the connection
            return
        try:
            messages = self.parser.feed(data)
        except protocol.FrameError as ex:
            log.warning("router: the controller sent a malformed frame (%s), reconnecting", ex)
            return self._finish()
        for message in messages:
            try:
                self.on_frame(message)
            except Exception as ex:  # noqa: BLE001 - one frame the router cannot take never ends the channel
                what = message.get("name") or message.get("type")
                log.warning("router: the controller's %s failed here: %s: %s", what, type(ex).__name__, ex)
                log.debug("router: the %s frame failed", what, exc_info=ex)

    def data_received(self, data: bytes) -> None:
        self.last_seen = asyncio.get_running_loop().time()
        self.parse(data)

    def eof_received(self) -> bool:
        self._finish()
        return False

    def connection_lost(self, exc) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


def refusal(ex: Exception) -> PermissionError:
    """What the SDK is told when the controller could not answer a call (``ControlError``, ``TimeoutError``) or
    failed it (``RuntimeError``): nothing hangs."""
    if isinstance(ex, RuntimeError):
        return PermissionError(f"the controller failed: {ex}")
    return PermissionError(f"the controller is unreachable ({ex})")
