"""The harness's pytest plugin, exercised with pytester as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

INSTALL = 'pip install "/path/to/checkout[harness]" (in a checkout: pip install -e ".[harness]")'

pytest_plugins = ["pytester"]


def test_plugin_fixtures_run_once_by_default_and_in_both_modes_on_request(pytester):
    pytester.makepyfile("""
        def test_admin_sees_itself(ziti_admin, ziti_mode):
            assert ziti_admin.management.get_current_identity()["isDefaultAdmin"] is True

        def test_factories(ziti_make_identity, ziti_admin):
            identity = ziti_make_identity(roleAttributes=["sales"], password="pass-word")
            assert identity["authenticators"]["updb"]["username"] == identity["name"]

        def test_clock_travel(ziti_admin, ziti_clock):
            ziti_clock.advance(minutes=45)
            assert ziti_admin.management.get_current_identity()["name"]  # the client logs in again
    """)
    pytester.runpytest("-p", "no:cacheprovider", "-q").assert_outcomes(passed=3)
    pytester.runpytest("-p", "no:cacheprovider", "-q", "--controller-mode=both").assert_outcomes(passed=6)


def test_controller_mode_option_selects_one_mode(pytester):
    pytester.makepyfile("""
        def test_mode(ziti_mode):
            assert ziti_mode == "http"
    """)
    pytester.runpytest("--controller-mode=http", "-q").assert_outcomes(passed=1)


def test_network_marker_applies_a_file(pytester):
    pytester.makefile(".yaml", net="identities:\n  - {name: alice, roleAttributes: [sales]}\n")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.network("net.yaml")
        def test_network(ziti_network, ziti_admin):
            names = [i["name"] for i in ziti_admin.management.iterate("listIdentities")]
            assert "alice" in names and ziti_network.names("identities") == ["alice"]
    """)
    pytester.runpytest("-q").assert_outcomes(passed=1)


def test_users_own_config_clock_and_network_fixtures_do_not_collide(pytester):
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def config():
            return {"mine": True}

        @pytest.fixture
        def clock():
            return "my clock"

        @pytest.fixture
        def network():
            return ["my", "network"]
    """)
    pytester.makepyfile("""
        def test_both(config, clock, network, ziti_admin, ziti_clock, ziti_config):
            assert config == {"mine": True} and clock == "my clock" and network == ["my", "network"]
            assert ziti_config.admin_username == "admin"
            assert ziti_admin.management.get_current_identity()["isDefaultAdmin"]
    """)
    pytester.runpytest("-q").assert_outcomes(passed=1)


def test_factories_accept_at_name_and_can_be_redeclared_with_other_returns(pytester):
    pytester.makeconftest("""
        from harness.testing.fixtures import identity_factory

        make_identity_id = identity_factory(returns="id")
    """)
    pytester.makepyfile("""
        def test_at_name(ziti_make_identity, ziti_make_service, ziti_make_service_policy, make_identity_id):
            device = ziti_make_identity("device-1")
            other_id = make_identity_id("device-2")
            assert isinstance(other_id, str) and other_id != device["id"]
            ziti_make_service("crm")
            policy = ziti_make_service_policy(["@device-1", "#sales"], ["@crm"])
            assert sorted(policy["identityRoles"]) == sorted([f"@{device['id']}", "#sales"])
            assert policy["identityRolesDisplay"][0]["name"] in ("@device-1", "#sales")
    """)
    pytester.runpytest("-q").assert_outcomes(passed=1)


def test_controller_auth_option_logs_the_admin_in_by_oidc(pytester):
    pytester.makepyfile("""
        def test_admin_by_oidc(ziti_admin, ziti_clock, ziti_auth_style):
            assert ziti_auth_style == "go" and ziti_admin.oidc is not None and ziti_admin.token is None
            first = ziti_admin.oidc.access_token
            ziti_clock.advance(minutes=50)  # past the access token's life: the client refreshes first
            assert ziti_admin.management.get_current_identity()["isDefaultAdmin"] is True
            assert ziti_admin.oidc.access_token != first
    """)
    pytester.runpytest(
        "--controller-auth=oidc-go", "--controller-mode=both", "-p", "no:cacheprovider", "-q"
    ).assert_outcomes(passed=2)


def test_external_controller_skips_time_travel(pytester):
    from controller.app import create_app
    from controller.server.serve import ThreadedServer

    with ThreadedServer(create_app()) as server:
        pytester.makepyfile("""
            def test_remote(ziti_admin):
                assert ziti_admin.management.get_current_identity()["isDefaultAdmin"]

            def test_travel(ziti_clock):
                ziti_clock.advance(seconds=1)
        """)
        result = pytester.runpytest(f"--controller-url={server.url}", "-q")
        result.assert_outcomes(passed=1, skipped=1)


def test_an_outside_project_uses_the_plugin_in_a_few_lines(tmp_path):
    """The README's "testing your SDK" file in a project folder of its own, run by a separate pytest."""
    import re

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    snippet = re.search(r"```python\n(# test_my_sdk.py.*?)```", readme, flags=re.S).group(1)
    (tmp_path / "test_my_sdk.py").write_text(snippet)
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def _readme_plugin_example() -> str:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    return re.search(r"```python\n(# test_my_sdk.py.*?)```", readme, flags=re.S).group(1)


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args, str(folder)],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_project_runs_twice_against_one_external_controller_and_leaves_nothing_behind(tmp_path):
    from controller.app import create_app
    from controller.server.serve import ThreadedServer
    from harness.client import ZitiClient

    (tmp_path / "test_my_sdk.py").write_text(
        _readme_plugin_example()
        + """

def test_generated_names(ziti_make_identity, ziti_make_service):
    assert ziti_make_identity()["name"] and ziti_make_service()["name"]
"""
    )
    app = create_app()
    with ThreadedServer(app) as server, ZitiClient.in_process(app) as admin:
        admin.login("admin", "admin")
        before = {kind: len(admin.management.call(op)) for kind, op in _LISTINGS}
        for _ in range(2):
            result = _pytest(tmp_path, f"--controller-url={server.url}")
            assert result.returncode == 0, result.stdout + result.stderr
            assert "2 passed" in result.stdout
        after = {kind: len(admin.management.call(op)) for kind, op in _LISTINGS}
    app.controller.close()
    assert after == before


_LISTINGS = [("identities", "listIdentities"), ("services", "listServices"), ("policies", "listServicePolicies")]


def test_a_dead_controller_url_is_one_line(tmp_path):
    from harness.processes.server import free_port

    (tmp_path / "test_x.py").write_text("def test_x(ziti_admin):\n    pass\n")
    url = f"http://127.0.0.1:{free_port()}"
    result = _pytest(tmp_path, f"--controller-url={url}")
    assert result.returncode == 4  # pytest's usage error
    assert "Traceback" not in result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"--controller-url {url}: no controller answers there" in lines[0]


def test_a_wrong_admin_or_scheme_stops_the_run_with_one_line(tmp_path):
    from harness.processes.server import LocalController

    (tmp_path / "test_x.py").write_text("def test_x(ziti_admin):\n    pass\n\ndef test_y(ziti_admin):\n    pass\n")
    with LocalController() as ctrl:
        https_as_http = ctrl.https_url.replace("https://", "http://")
        cases = {
            (ctrl.url, "admin:wrong"): f"--controller-admin admin:...: the controller at {ctrl.url} refused this "
            "login (INVALID_AUTH); give its admin's USER:PASSWORD",
            (ctrl.url, "admin"): "--controller-admin 'admin': give the admin's login as USER:PASSWORD",
            (https_as_http, "admin:admin"): f"--controller-url {https_as_http}: answered 400 without a controller's "
            "error envelope; the HTTPS port needs https://, the plain HTTP port http://",
        }
        results = {
            case: _pytest(tmp_path, f"--controller-url={case[0]}", f"--controller-admin={case[1]}") for case in cases
        }
    for case, expected in cases.items():
        result = results[case]
        assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error: no test ran
        assert "Traceback" not in result.stdout + result.stderr and "wrong" not in result.stderr
        assert [line for line in result.stderr.splitlines() if line.strip()] == [f"ERROR: {expected}"]


def test_the_factories_say_what_make_takes_in_pytest_fixtures(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x(ziti_make_identity):\n    pass\n")
    listing = _pytest(tmp_path, "--fixtures").stdout
    for name, summary in (
        ("ziti_make_identity", "Create identities: make(name=None, *, attrs=None, password=None)."),
        ("ziti_make_service", "Create services: make(name=None, *, attrs=(), configs=(), **fields)."),
        ("ziti_make_service_policy", "Create service policies: make(identity_roles, service_roles, *, type)."),
    ):
        lines = listing.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{name} "))
        assert lines[at + 1].strip() == summary
    verbose = _pytest(tmp_path, "--fixtures", "-vv").stdout  # -q is one of _pytest's own
    assert "attrs: role attributes (``roleAttributes``)" in verbose and "Returns:" in verbose


def test_without_the_harness_extra_a_run_using_the_fixtures_stops_with_one_line(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x(ziti_admin):\n    pass\n")
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    probe = (
        "import sys, pytest; sys.modules['pyotp'] = None;"  # as if the extra was not installed
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', *sys.argv[1:]]))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    runs = [
        subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        for args in ([], ["test_other.py"])
    ]
    stopped, other = runs
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    assert "Traceback" not in stopped.stdout + stopped.stderr
    assert f"the ziti_* fixtures: this needs the harness extra (pyotp not installed): {INSTALL}" in stopped.stdout
    assert other.returncode == 0 and "1 passed" in other.stdout  # a run without the fixtures is left alone


def test_a_test_file_that_cannot_import_the_harness_for_want_of_the_extra_stops_with_one_line(tmp_path):
    (tmp_path / "test_echo.py").write_text(
        "from harness.dataplane.sync import echo\n\n\ndef test_echo(ziti_quickstart):\n    pass\n"
    )
    (tmp_path / "test_own.py").write_text("import nacl\n\n\ndef test_own():\n    pass\n")
    probe = (
        "import sys, pytest; sys.modules['nacl'] = None;"  # as if the extra was not installed
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', *sys.argv[1:]]))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    stopped, own = (
        subprocess.run([sys.executable, "-c", probe, name], cwd=tmp_path, env=env, capture_output=True, text=True)
        for name in ("test_echo.py", "test_own.py")
    )
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    assert "Traceback" not in stopped.stdout + stopped.stderr
    assert f"test_echo.py imports the harness: this needs the harness extra (PyNaCl not installed): {INSTALL}" in (
        stopped.stdout
    )
    # a file of the user's own that lacks a module is the user's collection error, not the harness's
    assert own.returncode == 2 and "harness extra" not in own.stdout and "ModuleNotFoundError" in own.stdout
