"""The real OpenZiti C SDK (PyPI ``openziti`` 0.6.0, libziti 0.29) through the router.

Each SDK runs in a subprocess (libziti keeps process-wide state). The
quickstart's identities are enrolled by the harness (which also works with an
``--server-key ec`` controller, whose ES256 JWTs libziti 0.29 cannot verify);
one test has the SDK enroll itself against the default RSA server key.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.sync_dataplane import echo
from tests.router.raw import upper_after_eof

pytest.importorskip("openziti")
SCRIPT = Path(__file__).with_name("sdk_echo.py")
ENV = {"PATH": "/usr/bin:/bin", "ZITI_LOG": "2"}


def run_sdk(*args: str, timeout: float = 60) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=ENV
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_real_sdk_binder_and_real_sdk_dialer_echo_through_the_router(ziti_quickstart):
    out = run_sdk("both", ziti_quickstart.binder, ziti_quickstart.dialer, ziti_quickstart.service, "hello")
    assert "ECHO hello" in out


def test_harness_dialer_reaches_a_real_sdk_binder(ziti_quickstart, ziti_quickstart_controller):
    bound = threading.Event()
    unsubscribe = ziti_quickstart_controller.controller.events.subscribe(
        lambda e: bound.set() if e.get("namespace") == "terminator" and e.get("event_type") == "created" else None
    )
    binder = subprocess.Popen(
        [sys.executable, str(SCRIPT), "bind", str(ziti_quickstart.binder), ziti_quickstart.service],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=ENV,
    )
    try:
        assert bound.wait(30), "the real SDK never bound"
        with ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest, guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"hello real sdk")
            assert conn.recv_exactly(14) == b"hello real sdk"
    finally:
        unsubscribe()
        binder.kill()
        binder.communicate(timeout=10)


def test_real_sdk_dialer_reaches_a_harness_binder(ziti_quickstart):
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, echo)
        out = run_sdk("dial", ziti_quickstart.dialer, ziti_quickstart.service, "hello harness")
    assert "ECHO hello harness" in out


def test_real_sdk_half_close_reaches_the_host_as_end_of_stream(ziti_quickstart):
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, upper_after_eof)
        out = run_sdk("dial-fin", ziti_quickstart.dialer, ziti_quickstart.service, "shout")
    assert "ECHO SHOUT" in out


def test_the_real_sdk_enrolls_itself_then_binds_for_a_real_sdk_dialer(ziti_quickstart, tmp_path):
    admin, service = ziti_quickstart.admin, ziti_quickstart.service
    created = admin.management.create_identity(
        body={
            "name": f"{service}-self",
            "type": "User",
            "isAdmin": False,
            "roleAttributes": [f"{service}-binder"],
            "enrollment": {"ott": True},
        }
    )
    jwt_file = tmp_path / "self.jwt"
    jwt_file.write_text(admin.management.detail_identity(created["id"])["enrollment"]["ott"]["jwt"])
    run_sdk("enroll", jwt_file, tmp_path / "self.json")
    assert admin.management.detail_identity(created["id"])["authenticators"]["cert"]
    out = run_sdk("both", tmp_path / "self.json", ziti_quickstart.dialer, service, "self-enrolled")
    assert "ECHO self-enrolled" in out


def test_real_sdk_dialer_on_one_router_reaches_a_real_sdk_binder_on_another(net):
    """Multi-hop with libziti on both ends: the binder may use only router a, the dialer only router b."""
    net.start("a"), net.start("b")
    net.wait_links(1)
    service = net.service("sdk-hop")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    host = subprocess.Popen(
        [sys.executable, str(SCRIPT), "bind", str(binder), service],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=ENV,
    )
    try:
        created = net.timeline.wait("terminator", "created", timeout=30)[0]
        assert created["router_id"] == net.id("a")
        assert "ECHO across the link" in run_sdk("dial", dialer, service, "across the link")
        circuit = net.timeline.wait("circuit", "created")[0]
        assert circuit["path"]["nodes"] == [net.id("b"), net.id("a")]
    finally:
        host.kill()
        host.communicate(timeout=10)


def test_a_real_sdk_dialer_fails_over_when_its_router_goes(net):
    """libziti connects to every router it may use; when the one carrying its circuit goes, the circuit ends
    and the next dial goes through another router.

    NOTE: libziti 0.29 (openziti 0.6.0) keeps redialing the stopped router and its process sometimes ends
    right after ("connection refused", no crash report); the dial is then made by a fresh SDK process.
    """
    for short in "abc":
        net.start(short)
    net.wait_links(3)
    service = net.service("sdk-failover")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b", "c"])
    host = subprocess.Popen(
        [sys.executable, str(SCRIPT), "serve", str(binder), service, "host"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=ENV,
    )
    guests = []

    def start_guest():
        guests.append(
            subprocess.Popen(
                [sys.executable, str(SCRIPT), "dial-each", str(dialer), service],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=ENV,
            )
        )

    def ask(message: str) -> str | None:
        guest = guests[-1]
        try:
            guest.stdin.write(message + "\n")
            guest.stdin.flush()
        except BrokenPipeError:
            return None
        for line in guest.stdout:
            if line.startswith(("ECHO", "FAILED")):
                return line.strip()
        return None  # the SDK process ended

    try:
        start_guest()
        net.timeline.wait("terminator", "created", timeout=30)
        assert ask("first") == "ECHO host:first"
        entry = net.timeline.wait("circuit", "created")[0]["path"]["nodes"][0]
        net.stop({net.id(short): short for short in "bc"}[entry])
        answer = ask("again")
        if answer is None:
            start_guest()
            answer = ask("again")
        assert answer == "ECHO host:again"
        last = net.timeline.matching("circuit", "created")[-1]["path"]["nodes"]
        assert last[0] != entry and last[-1] == net.id("a")
    finally:
        for process in (*guests, host):
            process.kill()
            process.communicate(timeout=10)
