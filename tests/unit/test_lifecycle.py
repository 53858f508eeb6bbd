"""Listeners as a list: a failure to start stops those already up."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from controller.server.lifecycle import Listener, ListenerError, Listeners, check_ports, wait_for_stop
from controller.server.serve import ThreadedServer


def _hello(environ, start_response):
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"hello"]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_listener_that_cannot_bind_stops_the_ones_already_bound_and_none_serves():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        started = []

        def first(port):
            started.append(ThreadedServer(_hello, "127.0.0.1", port))
            return started[-1]

        group = Listeners(
            "127.0.0.1",
            [
                Listener("HTTP", "--http-port", 0, first),
                Listener("router", "--router-port", busy, lambda port: ThreadedServer(_hello, "127.0.0.1", port)),
            ],
        )
        with pytest.raises(ListenerError) as raised:
            group.start()
    assert str(raised.value).startswith(f"router port {busy} on 127.0.0.1 is in use")
    assert "--router-port PORT" in str(raised.value)
    assert not _listening(started[0].port)


def test_check_ports_names_the_first_port_in_use_and_passes_free_ones():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        free = Listener("HTTPS", "--port", 0, lambda port: None)
        check_ports("127.0.0.1", [free])
        with pytest.raises(ListenerError, match=f"HTTP port {busy} .* --http-port PORT"):
            check_ports("127.0.0.1", [free, Listener("HTTP", "--http-port", busy, lambda port: None)])


def test_stop_stops_every_listener_and_reports_success():
    group = Listeners(
        "127.0.0.1",
        [Listener(name, "--x", 0, lambda port: ThreadedServer(_hello, "127.0.0.1", port)) for name in ("a", "b")],
    ).start()
    ports = [group.port("a"), group.port("b")]
    assert all(_listening(port) for port in ports)
    assert group.stop() is True
    assert not any(_listening(port) for port in ports)


#: SIGINT handed to a thread other than the main one, as the kernel may do with a signal sent to the process
#: (then the main thread's wait is not interrupted and Python runs the handler only once it wakes)
OTHER_THREAD_SIGNAL = """
import signal, sys, threading, time
from {module} import stop_on_signals, wait_for_stop

class Stop(threading.Event):
    def __init__(self):
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout=None):
        self.waiting.set()  # the GIL passes to the sender once this thread blocks in the wait below
        return super().wait(timeout)

stop = Stop()
stop_on_signals(stop)

def send():
    stop.waiting.wait(10)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

threading.Thread(target=send).start()
started = time.monotonic()
wait_for_stop(stop)
print(round(time.monotonic() - started, 2), stop.is_set())
"""


#: the controller's commands (and the harness's) stop through the first, the router process through the second
STOPPING = ["controller.server.lifecycle", "router.stopping"]


@pytest.mark.parametrize("module", STOPPING)
def test_a_signal_landing_on_another_thread_stops_the_wait_at_once(module):
    """Ctrl-C on a controller took 5 s about one time in ten: the main thread slept out its sweep interval."""
    script = OTHER_THREAD_SIGNAL.replace("{module}", module)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seconds, stopped = done.stdout.split()
    assert float(seconds) < 2 and stopped == "True", done.stdout


#: SIGTERM while the main thread holds the stop event's lock, as it does for an instant in each ``stop.wait``:
#: Python runs the handler right there, between two bytecodes
SIGNAL_UNDER_THE_LOCK = """
import os, signal, threading, time
from {module} import stop_on_signals, wait_for_stop

stop = threading.Event()
stop_on_signals(stop)
with stop._cond:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)  # the handler has run once this returns
started = time.monotonic()
wait_for_stop(stop)
print(round(time.monotonic() - started, 2), stop.is_set())
"""


@pytest.mark.parametrize("module", STOPPING)
def test_a_signal_while_the_main_thread_holds_the_stop_events_lock_still_stops_the_wait(module):
    """``python -m controller`` once never exited on SIGTERM: its handler called ``stop.set()`` while the main
    thread, inside ``stop.wait``, held that event's lock."""
    try:
        script = SIGNAL_UNDER_THE_LOCK.replace("{module}", module)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the signal handler waited for the lock its own thread holds")
    assert done.returncode == 0, done.stderr
    seconds, stopped = done.stdout.split()
    assert float(seconds) < 2 and stopped == "True", done.stdout


def test_the_stop_wait_still_ticks_on_its_interval():
    stop, ticks = threading.Event(), []

    def tick():
        ticks.append(time.monotonic())
        if len(ticks) == 3:
            stop.set()

    started = time.monotonic()
    wait_for_stop(stop, tick, every=0.05)
    assert len(ticks) == 3 and ticks[0] - started >= 0.05
    assert all(later - earlier >= 0.05 for earlier, later in zip(ticks, ticks[1:]))
