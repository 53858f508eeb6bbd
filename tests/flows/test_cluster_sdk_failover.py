"""The real C SDK fails over between cluster members: an SDK whose identity names member 1 keeps getting sessions,
listing services and dialing after member 1 is killed (kill -9).

libziti 1.x reads ``HA_CONTROLLER`` in ``/version``, lists the members at ``/edge/client/v1/controllers`` after its
OIDC login, and moves to another member's edge client API when a request to its own fails to connect."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart
from harness.processes.routers import RouterProcess
from tests.ctrl.support import restrict_to

#: libziti refreshes its service list about once a minute: a service created after the kill is listed by then
SERVICE_REFRESH_SECONDS = 100.0


class DialingSdk:
    """``sdk_echo.py dial-services``: one SDK context; ``dial(service, text)`` -> the line it printed."""

    def __init__(self, sdk, identity: Path):
        self.process = sdk.popen("dial-services", identity, stdin=subprocess.PIPE)
        self.lines: list[str] = []
        self._outcomes = threading.Semaphore(0)
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)
            if line.startswith(("ECHO ", "FAILED ")):
                self.lines.append(line.strip())
                self._outcomes.release()

    def dial(self, service: str, text: str, timeout: float = 30.0) -> str:
        self.process.stdin.write(f"{service} {text}\n")
        self.process.stdin.flush()
        assert self._outcomes.acquire(timeout=timeout), f"no answer in {timeout} s: {''.join(self.output)[-3000:]}"
        return self.lines[-1]

    def dial_until_echo(self, service: str, text: str, timeout: float) -> list[str]:
        """Dial until one echoes (bounded in time and count); every outcome, the echo last."""
        outcomes, deadline = [], time.monotonic() + timeout
        for _ in range(500):
            outcomes.append(self.dial(service, text))
            if outcomes[-1] == f"ECHO {text}" or time.monotonic() > deadline:
                return outcomes
            time.sleep(1.0)
        return outcomes

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)


def name_member(identity: Path, url: str) -> None:
    """The identity file names only ``url`` (``ztAPI`` and ``ztAPIs``), as one enrolled at that member."""
    content = json.loads(identity.read_text())
    content["ztAPI"], content["ztAPIs"] = url, [url]
    identity.write_text(json.dumps(content))


def test_an_sdk_naming_member_1_keeps_sessions_services_and_dials_after_member_1_is_killed(
    real_sdk, ziti_cluster, tmp_path
):
    if not real_sdk.oidc_capable:
        pytest.skip(
            "libziti 0.29 has no controller failover: the HA_CONTROLLER capability, the controller list and the "
            "switch to another controller came with libziti 1.1.0; it stays with the controller its identity names"
        )
    cluster = ziti_cluster
    with cluster.client(0) as admin:  # the router too starts from member 1: it must fail over as well
        router = RouterProcess(admin, "sdk-router", tmp_path / "routers").start()
    with cluster.client(1) as admin:
        qs = new_quickstart(admin, tmp_path / "qs", "fo", controller_url=cluster.members[1].url, router_url=router.url)
        restrict_to(admin, "fo", [router.id])
    name_member(Path(qs.dialer), cluster.members[0].url)  # the dialer knows member 1 (ctrl1) only

    with SyncDataPlane.from_identity_file(qs.binder) as host:  # the binder's identity names member 2 (ctrl2)
        host.bind(qs.service, echo)
        dialer = DialingSdk(real_sdk, Path(qs.dialer))
        try:
            assert dialer.dial(qs.service, "before") == "ECHO before"

            cluster.kill(0)
            with cluster.client(1) as admin:
                # the SDK's Dial session goes: its next dial needs a new one, which only a live member can give
                for session in admin.mgmt_ok("GET", "/sessions", params={"filter": 'type = "Dial"', "limit": 500}):
                    admin.mgmt_ok("DELETE", f"/sessions/{session['id']}")
                # and a service it can only learn from a live member's service list
                admin.create("services", {"name": "fo-later", "roleAttributes": ["fo"], "encryptionRequired": True})
            host.bind("fo-later", echo)

            outcomes = dialer.dial_until_echo(qs.service, "after the kill", timeout=30.0)
            assert outcomes[-1] == "ECHO after the kill", outcomes
            with cluster.client(2) as admin:  # a Dial session made after the kill, by a member still up
                assert admin.mgmt_ok("GET", "/sessions", params={"filter": 'type = "Dial"', "limit": 500})
            outcomes = dialer.dial_until_echo("fo-later", "listed later", timeout=SERVICE_REFRESH_SECONDS)
            assert outcomes[-1] == "ECHO listed later", outcomes
        finally:
            dialer.close()
    router.stop()
