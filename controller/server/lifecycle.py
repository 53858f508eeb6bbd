"""Listeners as a list: check every port, start in order, stop them all.

This layer sits above the individual servers (``httpserver`` for plain HTTP,
``tls`` for HTTPS, the control channel, the edge router), so a new listener is
one more :class:`Listener` in the list. A server here is anything with ``.port``, ``.start()`` and ``.stop()``
that a ``bind(port)`` callable returns once it is bound and not yet serving
(raising ``OSError`` when it cannot bind).

* :func:`check_ports` refuses before anything starts or is written;
* :meth:`Listeners.start` binds every listener in order, then starts them all;
  if one cannot bind, it stops those already bound and raises
  :class:`ListenerError` naming the listener and its option;
* :meth:`Listeners.stop` stops them all in parallel within a deadline.
"""

from __future__ import annotations

import errno
import logging
import random
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger("controller.server.lifecycle")

#: how long stopping every listener may take (SIGTERM and Ctrl-C)
STOP_DEADLINE = 2.0


class ListenerError(OSError):
    """A listener that cannot start: ``str()`` is the one line a person reads."""

    def __init__(self, listener: "Listener", host: str, reason: str):
        self.listener = listener
        remedy = f"pick another port with {listener.option} PORT" if listener.option else "start again"
        super().__init__(f"{listener.name} port {listener.port} on {host} {reason}; stop what uses it or {remedy}")


class PortGivenTwice(ValueError):
    """Two listeners given the same fixed port: a usage mistake, found before anything binds."""

    def __init__(self, first: "Listener", second: "Listener"):
        super().__init__(
            f"{first.option} and {second.option} both give port {first.port}: give each its own port "
            "(0 picks any free one)"
        )


@dataclass
class Listener:
    """One listening server: its name, the option that sets its port (None: none does), how to bind it."""

    name: str
    option: str | None
    port: int
    bind: Callable[[int], Any]


def check_ports(host: str, listeners: list[Listener]) -> None:
    """Raise :class:`PortGivenTwice` for a fixed port given twice, :class:`ListenerError` for one that cannot be bound."""
    given: dict[int, Listener] = {}
    for listener in listeners:
        if listener.port and given.setdefault(listener.port, listener) is not listener:
            raise PortGivenTwice(given[listener.port], listener)
    for listener in listeners:
        if listener.port:
            reason = bind_problem(host, listener.port)
            if reason:
                raise ListenerError(listener, host, reason)


def bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound now (one phrase), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # NOTE(cli): the servers set SO_REUSEADDR too, so a port in TIME_WAIT is not "in use".
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            probe.listen(1)  # Linux refuses a listener beside another socket's TIME-WAIT on that port only here
        except OSError as ex:
            return _reason(ex)
    return None


def _reason(ex: OSError) -> str:
    if ex.errno == errno.EADDRINUSE:
        return "is in use"
    if ex.errno == errno.EACCES:
        return "needs privileges (ports under 1024)"
    if ex.errno == errno.EADDRNOTAVAIL:
        return "cannot be bound: the address is not on this machine"
    return f"cannot be bound ({ex.strerror or ex})"


class Listeners:
    """The process's listeners, started in order and stopped together."""

    def __init__(self, host: str, listeners: list[Listener]):
        self.host = host
        self.listeners = [listener for listener in listeners if listener is not None]
        self.servers: list[tuple[Listener, Any]] = []

    def check(self) -> None:
        check_ports(self.host, self.listeners)

    def start(self) -> "Listeners":
        """Bind all in order, then serve; on a failure stop every one and raise."""
        try:
            for listener in self.listeners:
                try:
                    server = listener.bind(listener.port)
                except OSError as ex:
                    raise ListenerError(listener, self.host, _reason(ex)) from ex
                if server is not None:
                    self.servers.append((listener, server))
            for _, server in self.servers:
                server.start()
        except BaseException:
            self.stop()
            raise
        return self

    def pick_free_ports(self, *options: str) -> None:
        """Give the listeners set by ``options`` that ask for any free port (0) one now: the addresses clients are
        given (enrollment JWTs, identity files, ``/controllers``) are written before the listeners bind, and must
        name the real one. The others bind port 0 themselves (no other process can take it in between).
        """
        for listener in self.listeners:
            if listener.port == 0 and listener.option in options:
                listener.port = free_port(self.host)

    def planned(self, option: str) -> int | None:
        """The port the listener set by ``option`` will bind (None when there is none)."""
        return next((listener.port for listener in self.listeners if listener.option == option), None)

    def port(self, name: str) -> int | None:
        """The bound port of the listener called ``name`` (None when it is off)."""
        return next((server.port for listener, server in self.servers if listener.name == name), None)

    def stop(self, deadline: float = STOP_DEADLINE) -> bool:
        """Stop every server in parallel; False when one is still stopping after ``deadline`` s."""
        threads = [
            threading.Thread(target=_stop_quietly, args=(listener, server), daemon=True, name=f"stop-{listener.name}")
            for listener, server in self.servers
        ]
        self.servers = []
        for thread in threads:
            thread.start()
        end = time.monotonic() + deadline
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)


#: where ``free_port`` picks: above the well-known and common service ports, below the kernel's ephemeral range
FREE_PORT_FLOOR = 10000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: its own source: tests seed the global one (Hypothesis does), and parallel workers would pick alike
_PICK = random.SystemRandom()


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for ports it picks itself (outgoing connections, bind to port 0)."""
    try:
        low, high = (int(part) for part in _EPHEMERAL_RANGE.read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now on ``host``, for a listener that binds it a little later.

    Picked at random below the kernel's ephemeral range: a port the kernel handed out (bind to port 0) is
    soon handed to an outgoing connection's local end as well, which then takes it before the listener
    binds ("address already in use"); below the range only another explicit bind can.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    low = ephemeral_ports()[0]
    for _ in range(50 if low > FREE_PORT_FLOOR + 1000 else 0):
        port = _PICK.randrange(FREE_PORT_FLOOR, low)
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _stop_quietly(listener: Listener, server) -> None:
    try:
        server.stop()
    except Exception as ex:  # noqa: BLE001 - stopping the others matters more
        log.warning("stopping the %s listener: %s", listener.name, ex)


#: how often the main thread waiting for ``stop`` wakes (a signal is acted on within this)
SIGNAL_CHECK = 0.1


def stop_on_signals(stop: threading.Event) -> None:
    """From now on SIGINT and SIGTERM end :func:`wait_for_stop` on ``stop`` (and set it).

    Python runs a signal handler in the main thread between two bytecodes, so possibly while that thread is inside
    ``stop.wait`` and holds the event's lock: a handler that called ``stop.set()`` there waited for that lock, held
    by its own thread, for ever (``python -m controller`` once never exited on SIGTERM). So the handler only marks
    the signal (an attribute store takes no lock) and the main thread's :func:`wait_for_stop` sets ``stop``. The
    router process does the same (``router/stopping.py``: the router imports nothing of the controller, and the
    controller imports the router only where it composes one)."""
    import signal

    def seen(*_) -> None:
        stop.signalled = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, seen)


def wait_for_stop(stop: threading.Event, tick: Callable[[], None] | None = None, every: float = 5.0) -> None:
    """Return once ``stop`` is set, or a signal :func:`stop_on_signals` watches came (``stop`` is set then);
    meanwhile ``tick()`` every ``every`` seconds. Wakes every :data:`SIGNAL_CHECK` seconds: a signal the kernel
    hands to another thread does not interrupt the main thread's wait, and Python runs the handler only once that
    thread wakes."""
    due = time.monotonic() + every
    while not stop.wait(SIGNAL_CHECK):
        if getattr(stop, "signalled", False):
            stop.set()
            return
        if tick is not None and time.monotonic() >= due:
            tick()
            due = time.monotonic() + every
