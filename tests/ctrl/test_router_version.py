"""Routers report their build when they come online, and one version is told everywhere (issue 31).

The console's "Router Version" column reads ``versionInfo.version`` of each edge router; the fabric API's router
carries the same ``versionInfo``. The controller's ``/version``, every command's ``--version`` and ``ziti
version`` name the one real release this project follows.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from controller.config import VERSION
from controller.ctrl.messages import MESSAGES, InvalidArgs
from router.version import version_info
from tests.ctrl.support import wait_until
from tests.ziti.conftest import ROOT

FIELDS = {"version", "revision", "buildDate", "os", "arch"}


def test_a_process_router_reports_its_build_over_the_control_channel(admin, make_router):
    router = make_router()
    listed = router.edge_listing()
    assert listed["versionInfo"] == version_info() and listed["versionInfo"]["version"] == VERSION
    assert all(listed[key] == listed["versionInfo"][key] for key in FIELDS)  # the document's top-level copies
    [fabric] = admin.fabric.call("listRouters", filter=f'name = "{router.name}"')
    assert fabric["connected"] and fabric["versionInfo"] == version_info()
    # the list the console draws its Router Version column from
    [row] = admin.mgmt_ok("GET", "/edge-routers", params={"filter": f'name = "{router.name}"'})
    assert row["versionInfo"]["version"] == VERSION and row["versionInfo"]["os"] and row["versionInfo"]["arch"]

    router.stop()
    wait_until(lambda: not router.edge_listing()["isOnline"], what="the router offline")
    assert router.edge_listing()["versionInfo"] == dict.fromkeys(FIELDS, "")
    [fabric] = admin.fabric.call("listRouters", filter=f'name = "{router.name}"')
    assert fabric["versionInfo"] is None


def test_the_embedded_router_reports_its_build_too(admin):
    [embedded] = admin.mgmt_ok("GET", "/edge-routers", params={"filter": 'name = "quickstart-router"'})
    assert embedded["isOnline"] and embedded["versionInfo"] == version_info()


ONLINE = MESSAGES["online"]


@pytest.mark.parametrize(
    "info", [{"version": 2}, {"version": "x" * 101}, {"secret": "x"}], ids=["not a string", "too long", "unknown field"]
)
def test_online_refuses_a_malformed_version_report(info):
    class Link:
        def online(self, url, version_info):
            raise AssertionError("a malformed report reached the router link")

    with pytest.raises(InvalidArgs):
        ONLINE.call(Link(), ONLINE.check({"url": "tls://127.0.0.1:1", "versionInfo": info}), "r1")


def test_one_version_in_every_command_and_in_slash_version(admin):
    def out(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert out("harness.ziti", "version") == VERSION
    for module, name in (("controller", "ziti-controller"), ("router", "ziti-router"), ("harness.cli", "ziti-harness")):
        assert out(module, "--version") == f"{name} {VERSION}"
    assert admin.raw.get("/edge/client/v1/version").json()["data"]["version"] == VERSION
    assert version_info()["version"] == VERSION
