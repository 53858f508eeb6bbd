"""The real OpenZiti C SDK through the router, in each version at hand (``tests/real_sdk.py``).

Each SDK runs in a subprocess (libziti keeps process-wide state): libziti 0.29 (PyPI ``openziti`` 0.6.0) logs
in the legacy way; libziti 1.18 (``openziti`` 1.7.1, from ``REAL_SDK_PYTHON``) logs in by OIDC when the
controller advertises it and the legacy way when it does not. The quickstart's identities are enrolled by the
harness (which also works with an ``--server-key ec`` controller, whose ES256 JWTs libziti 0.29 cannot verify);
one test has the SDK enroll itself against the default RSA server key.
"""

from __future__ import annotations

import subprocess
import threading
import time

from harness.client import ZitiClient
from harness.dataplane.sync import echo
from harness.processes.quickstart import new_quickstart
from harness.processes.server import LocalController
from tests.router.conftest import Timeline
from tests.router.raw import upper_after_eof


def logins_of(timeline: Timeline) -> set[str]:
    """The login methods of every successful authentication the controller saw (``cert`` or ``oidc-cert``)."""
    return {e["auth_method"] for e in timeline.matching("authentication", "success")}


def expected_login(real_sdk) -> str:
    return "oidc-cert" if real_sdk.oidc_capable else "cert"


def test_real_sdk_binder_and_real_sdk_dialer_echo_through_the_router(real_sdk, ziti_quickstart, timeline):
    out = real_sdk.run("both", ziti_quickstart.binder, ziti_quickstart.dialer, ziti_quickstart.service, "hello")
    assert "ECHO hello" in out
    assert logins_of(timeline) == {expected_login(real_sdk)}


def test_libziti_1_x_logs_in_the_legacy_way_when_the_controller_has_no_oidc(tmp_path, ziti_unique):
    from tests.real_sdk import sdk_or_skip

    real_sdk = sdk_or_skip("libziti-1.18")
    local = LocalController(router=True, quickstart_policies=True)
    local.config.oidc = False
    with local, ZitiClient.connect(local.url) as admin:
        admin.login("admin", "admin")
        qs = new_quickstart(
            admin, tmp_path, ziti_unique("legacy"), controller_url=local.https_url, router_url=local.router.url
        )
        timeline = Timeline(local.controller.events)
        try:
            out = real_sdk.run("both", qs.binder, qs.dialer, qs.service, "no oidc")
        finally:
            timeline.close()
    assert "ECHO no oidc" in out
    assert logins_of(timeline) == {"cert"}


def test_harness_dialer_reaches_a_real_sdk_binder(real_sdk, ziti_quickstart, ziti_quickstart_controller):
    bound = threading.Event()
    unsubscribe = ziti_quickstart_controller.controller.events.subscribe(
        lambda e: bound.set() if e.get("namespace") == "terminator" and e.get("event_type") == "created" else None
    )
    binder = real_sdk.popen("bind", ziti_quickstart.binder, ziti_quickstart.service)
    try:
        assert bound.wait(30), "the real SDK never bound"
        with ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest, guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"hello real sdk")
            assert conn.recv_exactly(14) == b"hello real sdk"
    finally:
        unsubscribe()
        binder.kill()
        binder.communicate(timeout=10)


def test_real_sdk_dialer_reaches_a_harness_binder(real_sdk, ziti_quickstart):
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, echo)
        out = real_sdk.run("dial", ziti_quickstart.dialer, ziti_quickstart.service, "hello harness")
    assert "ECHO hello harness" in out


def test_real_sdk_half_close_reaches_the_host_as_end_of_stream(real_sdk, ziti_quickstart):
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, upper_after_eof)
        out = real_sdk.run("dial-fin", ziti_quickstart.dialer, ziti_quickstart.service, "shout")
    assert "ECHO SHOUT" in out


def test_the_real_sdk_enrolls_itself_then_binds_for_a_real_sdk_dialer(real_sdk, ziti_quickstart, tmp_path):
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
    real_sdk.run("enroll", jwt_file, tmp_path / "self.json")
    assert admin.management.detail_identity(created["id"])["authenticators"]["cert"]
    out = real_sdk.run("both", tmp_path / "self.json", ziti_quickstart.dialer, service, "self-enrolled")
    assert "ECHO self-enrolled" in out


def test_real_sdk_dialer_on_one_router_reaches_a_real_sdk_binder_on_another(real_sdk, net):
    """Multi-hop with libziti on both ends: the binder may use only router a, the dialer only router b."""
    net.start("a"), net.start("b")
    net.wait_links(1)
    service = net.service("sdk-hop")
    binder = net.identity("binder", service, "Bind", ["a"])
    dialer = net.identity("dialer", service, "Dial", ["b"])
    host = real_sdk.popen("bind", binder, service)
    try:
        created = net.timeline.wait("terminator", "created", timeout=30)[0]
        assert created["router_id"] == net.id("a")
        assert "ECHO across the link" in real_sdk.run("dial", dialer, service, "across the link")
        circuit = net.timeline.wait("circuit", "created")[0]
        assert circuit["path"]["nodes"] == [net.id("b"), net.id("a")]
    finally:
        host.kill()
        host.communicate(timeout=10)


def test_a_real_sdk_dialer_fails_over_when_its_router_goes(real_sdk, net):
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
    host = real_sdk.popen("serve", binder, service, "host")
    guests = []

    def start_guest():
        guests.append(real_sdk.popen("dial-each", dialer, service, stdin=subprocess.PIPE))

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
        for _ in range(2):  # bounded: a dial made before libziti saw the stopped router's channel close fails once
            if answer is None:
                start_guest()
                answer = ask("again")
            elif answer.startswith("FAILED"):
                time.sleep(0.5)
                answer = ask("again")
        assert answer == "ECHO host:again"
        last = net.timeline.matching("circuit", "created")[-1]["path"]["nodes"]
        assert last[0] != entry and last[-1] == net.id("a")
    finally:
        for process in (*guests, host):
            process.kill()
            process.communicate(timeout=10)
