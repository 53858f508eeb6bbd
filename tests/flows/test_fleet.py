"""The fleet simulator: SDKs that log in and poll as libziti 1.x does, from Python and from ``ziti-harness``."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys

import pytest

from harness.client import ZitiClient
from harness.dataplane import flows
from harness.dataplane.fleet import Fleet, Schedule, provision

FAST = Schedule(service_updates=0.5, edge_routers=1.0)


@pytest.fixture(scope="module")
def controller(ziti_quickstart_controller):
    local = ziti_quickstart_controller
    ziti_admin = ZitiClient.connect(local.url)
    ziti_admin.login("admin", "admin")
    yield local, ziti_admin, flows.ca_bundle(ziti_admin)
    ziti_admin.close()


def _fleet_identities(ziti_admin, names: list[str]) -> list[dict]:
    found = []
    for name in names:
        found += ziti_admin.management.list_identities(filter=f'name = "{name}"')
    return found


def test_a_small_fleet_enrolls_logs_in_by_oidc_and_polls_without_errors(controller, ziti_unique):
    local, ziti_admin, ca = controller
    prefix = ziti_unique("fleet")
    fleet = Fleet(local.https_url, ca, provision(ziti_admin, 4, prefix=prefix), schedule=FAST)
    seconds = []
    report = fleet.run_sync(3.0, ramp=0.2, warmup=0.0, on_second=seconds.append)
    assert report.errors == []
    assert report.logged_in == 4
    assert report.latencies_ms and seconds and sum(s.polls for s in seconds) == len(report.latencies_ms)
    assert all(sdk.auth_header.startswith("Authorization: Bearer ") and sdk.refresh_token for sdk in fleet.sdks)
    enrolled = _fleet_identities(ziti_admin, [f"{prefix}-sdk-{n}" for n in range(4)])
    assert sorted(i["name"] for i in enrolled) == [f"{prefix}-sdk-{n}" for n in range(4)]


def test_an_sdk_refreshes_its_tokens_and_keeps_polling(controller, ziti_unique):
    local, ziti_admin, ca = controller
    fleet = Fleet(local.https_url, ca, provision(ziti_admin, 1, prefix=ziti_unique("fleet")), schedule=FAST)
    [sdk] = fleet.sdks

    async def login_refresh_poll():
        await sdk.enroll()
        await sdk.login()
        first, first_refresh = sdk.auth_header, sdk.refresh_token
        await sdk.refresh()
        await sdk.poll_service_updates()
        sdk.close()
        return first, first_refresh

    first, first_refresh = asyncio.run(login_refresh_poll())
    assert sdk.auth_header != first and sdk.refresh_token != first_refresh
    assert sdk.auth_header.startswith("Authorization: Bearer ")


def test_legacy_logins_on_request_and_a_login_storm_leaves_nobody_out(controller, ziti_unique):
    local, ziti_admin, ca = controller
    identities = provision(ziti_admin, 6, prefix=ziti_unique("fleet"))
    legacy = Fleet(local.https_url, ca, identities, schedule=Schedule(0.5, 1.0, "legacy"))
    stormed = legacy.login_storm()
    assert (stormed["logged_in"], stormed["failed"]) == (6, 0)
    assert all(sdk.auth_header.startswith("zt-session: ") for sdk in legacy.sdks)
    oidc = Fleet(local.https_url, ca, identities, schedule=FAST, enroll=False).login_storm()
    assert (oidc["logged_in"], oidc["failed"]) == (6, 0)


def _harness(*args: str) -> subprocess.CompletedProcess:
    command = shutil.which("ziti-harness") or sys.executable
    prefix = [] if command != sys.executable else ["-m", "harness.cli"]
    return subprocess.run([command, *prefix, *args], capture_output=True, text=True, timeout=120, env=os.environ)


def test_ziti_harness_fleet_streams_one_json_line_per_second_then_a_summary(controller):
    local, _, _ = controller
    done = _harness(
        "fleet",
        "--url",
        local.url,
        "--sdk-url",
        local.https_url,
        "--clients",
        "3",
        "--seconds",
        "3",
        "--poll-every",
        "0.5",
        "--ramp",
        "0.2",
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    *seconds, last = lines
    assert seconds and all({"t", "polls", "p50_ms", "p99_ms", "errors"} <= set(s) for s in seconds)
    assert last["summary"]["logged_in"] == 3 and last["summary"]["errors"] == 0 and last["errors"] == []


def test_ziti_harness_fleet_without_an_https_address_says_what_to_give(controller):
    local, _, _ = controller
    done = _harness("fleet", "--url", local.url, "--clients", "1", "--seconds", "1")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: the SDKs need the controller's HTTPS address: give --sdk-url https://HOST:PORT"
    ]
