"""Access tests in network files: ``apply`` refuses a network that breaks them, ``ziti-harness test`` checks a live one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.app import create_app
from controller.server.serve import ThreadedServer
from harness.analysis import Analysis
from harness.analysis.access_tests import cases_of, run_tests
from harness.network import Network, NetworkError

ROOT = Path(__file__).resolve().parents[2]
COMPANY = ROOT / "fixtures" / "networks" / "company.yaml"


def ziti_harness(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT
    )


@pytest.fixture
def url():
    app = create_app()
    with ThreadedServer(app) as server:
        yield server.url
    app.controller.close()


def company(**changes) -> dict:
    """The company network with whole entities replaced by name."""
    data = yaml.safe_load(COMPANY.read_text())
    for key, items in changes.items():
        data[key] = [items.get(item["name"], item) for item in data[key]]
    return data


def write(tmp_path: Path, data: dict, name: str = "net.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


CLOSED_WIKI = {
    "staff-wiki": {
        "name": "staff-wiki",
        "type": "Dial",
        "identityRoles": ["#staff"],
        "serviceRoles": ["#all-staff-apps"],
    }
}


def test_the_company_tests_pass_on_apply_and_on_the_live_controller(url):
    applied = ziti_harness("apply", str(COMPANY), "--url", url, "--quiet")
    assert applied.returncode == 0, applied.stderr
    checked = ziti_harness("test", str(COMPANY), "--url", url)
    assert checked.returncode == 0
    assert checked.stdout.strip() == "all 23 access test(s) pass"


def test_apply_refuses_a_network_that_breaks_a_test_and_says_why(url, tmp_path):
    assert ziti_harness("apply", str(COMPANY), "--url", url, "--quiet").returncode == 0
    broken = write(tmp_path, company(servicePolicies=CLOSED_WIKI))
    refused = ziti_harness("apply", broken, "--url", url, "--quiet")
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert lines[0] == (
        "FAIL tests[4] eve.contractor should dial wiki: eve.contractor CANNOT dial wiki: no Dial policy "
        "grants it; smallest change: add @eve.contractor to staff-wiki's identity roles (policy staff-wiki)"
    )
    assert lines[-1] == f"{broken}: 1 of 23 access test(s) fail; nothing applied (--force applies anyway)"
    live = ziti_harness("test", str(COMPANY), "--url", url)
    assert live.returncode == 0  # nothing was written


def test_force_applies_anyway_and_the_live_test_then_fails(url, tmp_path):
    broken = write(tmp_path, company(servicePolicies=CLOSED_WIKI))
    forced = ziti_harness("apply", broken, "--url", url, "--quiet", "--force")
    assert forced.returncode == 0, forced.stderr
    live = ziti_harness("test", str(COMPANY), "--url", url)
    assert live.returncode == 1
    assert live.stdout.splitlines() == [
        "FAIL tests[4] eve.contractor should dial wiki: eve.contractor CANNOT dial wiki: no Dial policy grants it; "
        "smallest change: add @eve.contractor to staff-wiki's identity roles (policy staff-wiki)",
        "1 of 23 access test(s) fail",
    ]


def test_apply_judges_the_network_as_it_will_be_merged_with_the_controller(url, tmp_path):
    assert ziti_harness("apply", str(COMPANY), "--url", url, "--quiet").returncode == 0
    # the file names only eve; the policies that would let her in live on the controller
    change = write(
        tmp_path,
        {
            "identities": [{"name": "eve.contractor", "type": "User", "roleAttributes": ["contractors", "ops"]}],
            "tests": [{"identity": "eve.contractor", "dial": ["wiki"], "deny": ["ssh", "payroll"]}],
        },
    )
    refused = ziti_harness("apply", change, "--url", url, "--quiet", "--dry-run")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "FAIL tests[0] eve.contractor should not dial ssh: eve.contractor CAN dial ssh "
        "(granted by ops-ssh; routers er-eu-1, er-eu-2, er-us-1); smallest change: "
        "to remove access: remove attribute(s) ['ops'] from eve.contractor (ops-ssh)"
    )


def test_a_test_naming_an_unknown_service_fails_with_the_name(url, tmp_path):
    path = write(tmp_path, {"tests": [{"identity": "nobody", "dial": ["crm"]}]})
    live = ziti_harness("test", path, "--url", url)
    assert live.returncode == 1
    assert live.stdout.splitlines()[0] == (
        "FAIL tests[0] nobody should dial crm: no identity named 'nobody' and no service named 'crm' in the network"
    )


def test_a_file_without_tests_is_a_usage_error(url, tmp_path):
    path = write(tmp_path, {"identities": [{"name": "solo"}]})
    result = ziti_harness("test", path, "--url", url)
    assert result.returncode == 2 and result.stderr.strip() == f"{path}: no tests: section to check"


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"identity": "ana.sales", "dail": ["crm"]}, "tests[0]: unknown field 'dail'; did you mean 'dial'?"),
        ({"dial": ["crm"]}, "tests[0]: needs identity: NAME"),
        ({"identity": "ana.sales"}, "tests[0]: names no service; add dial, deny, bind or denyBind"),
        ({"identity": "ana.sales", "deny": "crm"}, "tests[0].deny: must be a list of service names"),
    ],
)
def test_a_malformed_tests_section_is_refused_when_read(entry, message):
    with pytest.raises(NetworkError) as caught:
        Network.from_dict({"tests": [entry]})
    assert str(caught.value) == message


def test_declared_posture_is_judged_and_undeclared_posture_is_not():
    network = Network.from_yaml(COMPANY)
    cases = cases_of(
        [
            {"identity": "ben.sales", "dial": ["crm"]},
            {
                "identity": "ben.sales",
                "posture": {"domain": "corp.example", "os": {"type": "Linux", "version": "6.8"}},
                "dial": ["crm"],
            },
        ]
    )
    report = run_tests(Analysis(network), cases)
    assert [r.passed for r in report.results] == [True, False]
    assert (
        "allowed, but posture checks fail; smallest change: allowed, but posture fails: supported-os"
        in report.results[1].reason
    )


def test_the_library_apply_raises_with_every_failing_case_and_force_applies():
    from harness.analysis.access_tests import AccessTestsFailed
    from harness.client import ZitiClient
    from harness.network import apply, export

    app = create_app()
    try:
        with ZitiClient.in_process(app) as admin:
            admin.login("admin", "admin")
            with pytest.raises(AccessTestsFailed) as caught:
                apply(admin, company(servicePolicies=CLOSED_WIKI))
            assert str(caught.value).splitlines()[0] == "1 of 23 access test(s) fail; nothing applied"
            assert str(caught.value).splitlines()[1].startswith("FAIL tests[4] eve.contractor should dial wiki")
            assert not export(admin).entities  # nothing was written
            assert apply(admin, company(servicePolicies=CLOSED_WIKI), force=True)
    finally:
        app.controller.close()


PEOPLE = [
    ("ana.sales", "Sales-Pass-123", ("Windows", "10.0.19045")),
    ("ben.sales", "Sales-Pass-456", ("Linux", "6.8")),
    ("cara.finance", "Money-Pass-789", ("macOS", "14.4")),
    ("dev.ops", "Ops-Pass-1234", ("Windows", "10.0.19045")),
]


def test_the_verdicts_agree_with_the_controller_s_session_answers():
    """Each person reports posture; a test declaring the same posture passes exactly when POST /sessions says 201."""
    from controller.clock import FrozenClock
    from harness.client import ApiError, ZitiClient
    from harness.network import apply

    app = create_app(clock=FrozenClock("2025-06-01T12:00:00Z"))
    try:
        with ZitiClient.in_process(app) as admin:
            admin.login("admin", "admin")
            apply(admin, COMPANY)
            services = {s["name"]: s["id"] for s in admin.management.iterate("listServices")}
            check_id = next(c["id"] for c in admin.management.iterate("listPostureChecks"))
            seen = set()
            for name, password, (os_type, version) in PEOPLE:
                with ZitiClient.in_process(app) as person:
                    person.login(name, password, api="client")
                    person.edge.create_posture_response_bulk(
                        body=[
                            {"id": check_id, "typeId": "DOMAIN", "domain": "corp.example"},
                            {"id": check_id, "typeId": "OS", "type": os_type, "version": version},
                        ]
                    )
                    declared = {"domain": "corp.example", "os": {"type": os_type, "version": version}}
                    report = run_tests(
                        Analysis(Network.from_yaml(COMPANY)),
                        cases_of([{"identity": name, "posture": declared, "dial": sorted(services)}]),
                    )
                    for result in report.results:
                        try:
                            person.edge.create_session(
                                body={"serviceId": services[result.case.service], "type": "Dial"}
                            )
                            created = True
                        except ApiError:
                            created = False
                        assert result.passed == created, result.line()
                        seen.add(created)
            assert seen == {True, False}  # both answers were exercised
    finally:
        app.controller.close()
