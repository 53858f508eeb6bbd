"""The harness's pytest plugin, exercised with pytester as a user would."""
from __future__ import annotations

pytest_plugins = ["pytester"]


def test_plugin_fixtures_run_in_both_modes(pytester):
    pytester.makepyfile("""
        def test_admin_sees_itself(ziti_admin, controller_mode):
            assert ziti_admin.management.get_current_identity()["isDefaultAdmin"] is True

        def test_factories(make_identity, ziti_admin):
            identity = make_identity(roleAttributes=["sales"], password="pass-word")
            assert identity["authenticators"]["updb"]["username"] == identity["name"]

        def test_clock_travel(ziti_admin, clock):
            clock.advance(minutes=45)
            assert ziti_admin.management.get_current_identity()["name"]  # the client logs in again
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=6)


def test_controller_mode_option_selects_one_mode(pytester):
    pytester.makepyfile("""
        def test_mode(controller_mode):
            assert controller_mode == "inprocess"
    """)
    pytester.runpytest("--controller-mode=inprocess", "-q").assert_outcomes(passed=1)


def test_network_marker_applies_a_file(pytester):
    pytester.makefile(".yaml", net="identities:\n  - {name: alice, roleAttributes: [sales]}\n")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.network("net.yaml")
        def test_network(network, ziti_admin):
            names = [i["name"] for i in ziti_admin.management.iterate("listIdentities")]
            assert "alice" in names and network.names("identities") == ["alice"]
    """)
    pytester.runpytest("--controller-mode=inprocess", "-q").assert_outcomes(passed=1)


def test_external_controller_skips_time_travel(pytester):
    from controller.app import create_app
    from controller.serve import ThreadedServer

    with ThreadedServer(create_app()) as server:
        pytester.makepyfile("""
            def test_remote(ziti_admin):
                assert ziti_admin.management.get_current_identity()["isDefaultAdmin"]

            def test_travel(clock):
                clock.advance(seconds=1)
        """)
        result = pytester.runpytest(f"--controller-url={server.url}", "-q")
        result.assert_outcomes(passed=1, skipped=1)


def test_controller_auth_option_logs_the_admin_in_by_oidc(pytester):
    pytester.makepyfile("""
        def test_admin_by_oidc(ziti_admin, clock, auth_style):
            assert auth_style == "go" and ziti_admin.oidc is not None and ziti_admin.token is None
            first = ziti_admin.oidc.access_token
            clock.advance(minutes=50)  # past the access token's life: the client refreshes first
            assert ziti_admin.management.get_current_identity()["isDefaultAdmin"] is True
            assert ziti_admin.oidc.access_token != first
    """)
    pytester.runpytest("--controller-auth=oidc-go", "-p", "no:cacheprovider", "-q").assert_outcomes(passed=2)
