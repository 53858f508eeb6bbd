"""Controller operations: settings, snapshots, data integrity, tracing, auth rate limits, 503s."""

from __future__ import annotations

import errno
from contextlib import contextmanager

import pytest

from controller.app import create_app
from controller.config import Config
from controller.store import journal
from controller.store.db import Store
from harness.client import ZitiClient
from harness.client.transport import inprocess
from tests.support import assert_error, auth_policy_body, login


@contextmanager
def controller(config: Config, clock, store: Store | None = None):
    """A separate controller (own data folder or store) and an anonymous in-process ``ZitiClient``."""
    app = create_app(config, clock=clock, store=store)
    try:
        with inprocess(app) as http:
            yield app, ZitiClient(http)
    finally:
        app.controller.close()


# -- controller settings --------------------------------------------------------------------


def test_global_settings_exist_and_cannot_be_deleted(ziti_admin):
    listed = ziti_admin.mgmt_ok("GET", "/controller-settings")
    glob = next(item for item in listed if item["id"] == "global")
    assert glob["oidc"] == {"postLogoutUris": [], "redirectUris": []}
    assert_error(
        ziti_admin.mgmt("DELETE", "/controller-settings/global/effective"), 409, "CAN_NOT_DELETE_REFERENCED_ENTITY"
    )


def test_override_merges_over_global_in_the_effective_view(ziti_admin, ziti_unique):
    controller_id = ziti_unique("ctrl")
    ziti_admin.mgmt_ok(
        "PATCH", "/controller-settings/global/effective", json={"oidc": {"postLogoutUris": ["https://out.example"]}}
    )
    response = ziti_admin.mgmt(
        "POST",
        "/controller-settings",
        json={"controllerId": controller_id, "oidc": {"redirectUris": ["https://in.example"]}},
    )
    assert response.status_code == 201 and response.json()["data"]["id"] == controller_id
    effective = ziti_admin.mgmt_ok("GET", f"/controller-settings/{controller_id}/effective")
    assert effective["effective"]["oidc"] == {
        "postLogoutUris": ["https://out.example"],
        "redirectUris": ["https://in.example"],
    }
    assert effective["instance"]["oidc"] == {"redirectUris": ["https://in.example"]}
    assert ziti_admin.mgmt_ok("GET", f"/controller-settings/{controller_id}")["oidc"] == {
        "redirectUris": ["https://in.example"]
    }


def test_override_replace_patch_and_delete(ziti_admin, ziti_unique):
    controller_id = ziti_unique("ctrl")
    ziti_admin.create("controller-settings", {"controllerId": controller_id})
    path = f"/controller-settings/{controller_id}/effective"
    ziti_admin.mgmt_ok("PUT", path, json={"oidc": {"postLogoutUris": ["https://a.example"]}, "tags": {"k": "v"}})
    ziti_admin.mgmt_ok("PATCH", path, json={"oidc": {"redirectUris": ["https://b.example"]}})
    data = ziti_admin.mgmt_ok("GET", f"/controller-settings/{controller_id}")
    assert data["oidc"] == {"postLogoutUris": ["https://a.example"], "redirectUris": ["https://b.example"]}
    assert data["tags"] == {"k": "v"}
    ziti_admin.mgmt_ok("DELETE", path)
    assert_error(ziti_admin.mgmt("GET", f"/controller-settings/{controller_id}"), 404, "NOT_FOUND")


def test_duplicate_overrides_and_unknown_controllers(ziti_admin, ziti_unique):
    controller_id = ziti_unique("ctrl")
    ziti_admin.create("controller-settings", {"controllerId": controller_id})
    for duplicate in (controller_id, "global"):
        response = ziti_admin.mgmt("POST", "/controller-settings", json={"controllerId": duplicate})
        assert_error(response, 400, "COULD_NOT_VALIDATE", "controllerId")
    assert_error(ziti_admin.mgmt("GET", "/controller-settings/nowhere/effective"), 404, "NOT_FOUND")
    running = ziti_admin.mgmt_ok("GET", "/controllers")[0]["id"]
    effective = ziti_admin.mgmt_ok("GET", f"/controller-settings/{running}/effective")
    assert effective["instance"]["oidc"] == {} and effective["effective"]["oidc"]["redirectUris"] == []


# -- database snapshot ------------------------------------------------------------------------


def test_snapshot_is_limited_to_one_a_minute(ziti_admin, ziti_clock):
    assert ziti_admin.mgmt("POST", "/database/snapshot").json() == {"data": {}, "meta": {}}
    ziti_clock.advance(seconds=59)
    assert_error(ziti_admin.mgmt("POST", "/database/snapshot"), 429, "RATE_LIMITED")
    ziti_clock.advance(seconds=1)
    assert ziti_admin.mgmt("POST", "/database/snapshot").status_code == 200


def test_a_snapshot_restores_into_a_controller_that_answers_the_same(
    ziti_admin, ziti, ziti_app, ziti_clock, ziti_config, make_identity, ziti_unique
):
    policy_id = ziti_admin.create("auth-policies", auth_policy_body(ziti_unique("snap-policy"), max_attempts=4))
    make_identity(
        ziti_unique("snap"), password="snap-pass", username="snap-user", authPolicyId=policy_id, roleAttributes=["blue"]
    )
    ziti_admin.create(
        "external-jwt-signers",
        {
            "name": ziti_unique("snap-signer"),
            "issuer": "https://snap.example",
            "audience": "a",
            "enabled": True,
            "jwksEndpoint": "https://snap.example/k",
        },
    )
    ziti_admin.create("controller-settings", {"controllerId": ziti_unique("snap-ctrl")})
    ziti_admin.mgmt_ok("POST", "/database/snapshot")
    path = ziti_app.controller.events.query("database", event_type="snapshot")[-1]["path"]
    paths = (
        "/identities",
        "/auth-policies",
        "/authenticators",
        "/external-jwt-signers",
        "/controller-settings",
        "/identity-types",
    )
    before = {p: ziti_admin.mgmt_ok("GET", p, params={"limit": 500}) for p in paths}

    with controller(Config(), ziti_clock, Store(path)) as (_, restored):
        restored_admin = restored.signed_in("admin", "admin")
        for p in paths:
            assert restored_admin.mgmt_ok("GET", p, params={"limit": 500}) == before[p], p
        assert login(restored, "snap-user", "snap-pass").status_code == 200


def test_snapshots_go_to_the_data_folder(tmp_path, ziti_clock):
    with controller(Config(data_dir=tmp_path, fsync=False), ziti_clock) as (app, ziti):
        ziti.signed_in("admin", "admin").mgmt_ok("POST", "/database/snapshot")
        folders = list((tmp_path / "snapshots").iterdir())
        assert [f.name for f in folders] == ["ctrl.db-20250601-120000"]
        with Store(folders[0]) as copy:
            assert copy.count("identities") == app.controller.store.count("identities")


# -- data integrity ----------------------------------------------------------------------------


def plant_inconsistencies(store, unique) -> dict:
    """Write dangling references straight into the store, as a bug or a bad restore would."""
    ids = {"auth": unique("dangling-auth"), "identity": unique("orphaned-policy"), "policy": unique("ghost-signers")}
    now = "2025-06-01T12:00:00.000Z"
    base = {"created_at": now, "updated_at": now, "tags": {}}
    store.put(
        "authenticators",
        ids["auth"],
        {**base, "id": ids["auth"], "method": "updb", "identity_id": "ghost", "username": ids["auth"]},
    )
    store.put(
        "identities",
        ids["identity"],
        {**base, "id": ids["identity"], "name": ids["identity"], "type_id": "Default", "auth_policy_id": "gone-policy"},
    )
    policy = {
        **base,
        "id": ids["policy"],
        "name": ids["policy"],
        "primary": {
            "cert": {"allowed": True, "allow_expired_certs": True},
            "ext_jwt": {"allowed": True, "allowed_signers": ["gone"]},
            "updb": {"allowed": True},
        },
        "secondary": {"require_totp": False, "require_ext_jwt_signer": "gone-too"},
    }
    store.put("auth_policies", ids["policy"], policy)
    store.put("mfas", "ghost-mfa", {**base, "id": "ghost-mfa", "identity_id": "ghost-mfa", "is_verified": True})
    return ids


def finished_results(ziti_admin, controller_app) -> dict:
    assert controller_app.controller.ops.integrity.join(timeout=30)
    response = ziti_admin.mgmt("GET", "/database/data-integrity-results")
    assert response.json()["meta"]["pagination"]["limit"] == -1
    return response.json()["data"]


def test_check_reports_and_fix_repairs_planted_dangling_references(ziti_admin, ziti_app, make_service, ziti_unique):
    assert finished_results(ziti_admin, ziti_app)["results"] == []
    store = ziti_app.controller.store
    ids = plant_inconsistencies(store, ziti_unique)
    service_id = make_service()
    store.put("services", service_id, {**store.get("services", service_id), "configs": ["gone-config"]})

    assert ziti_admin.mgmt("POST", "/database/check-data-integrity").status_code == 202
    checked = finished_results(ziti_admin, ziti_app)
    assert checked["inProgress"] is False and checked["fixingErrors"] is False and checked["error"] is None
    assert len(checked["results"]) == 6 and not any(r["fixed"] for r in checked["results"])
    assert any(ids["auth"] in r["description"] and "ghost" in r["description"] for r in checked["results"])
    assert ziti_admin.mgmt("GET", f"/authenticators/{ids['auth']}").status_code == 200  # a check changes nothing

    assert ziti_admin.mgmt("POST", "/database/fix-data-integrity").json() == {"data": {}, "meta": {}}
    fixed = finished_results(ziti_admin, ziti_app)
    assert fixed["fixingErrors"] is True and len(fixed["results"]) == 6 and all(r["fixed"] for r in fixed["results"])
    assert_error(ziti_admin.mgmt("GET", f"/authenticators/{ids['auth']}"), 404, "NOT_FOUND")
    assert ziti_admin.mgmt_ok("GET", f"/identities/{ids['identity']}")["authPolicyId"] == "default"
    policy = ziti_admin.mgmt_ok("GET", f"/auth-policies/{ids['policy']}")
    assert policy["primary"]["extJwt"]["allowedSigners"] == [] and policy["secondary"]["requireExtJwtSigner"] is None
    assert ziti_admin.mgmt_ok("GET", f"/services/{service_id}")["configs"] == []
    ziti_admin.mgmt_ok("POST", "/database/check-data-integrity")
    assert finished_results(ziti_admin, ziti_app)["results"] == []
    assert ziti_app.controller.events.query("database", event_type="snapshot")  # fix snapshots first


def test_check_and_fix_cover_role_entries_and_policy_derived_links(ziti_admin, ziti_app, make_identity, ziti_unique):
    ctl = ziti_app.controller
    identity_id = make_identity()
    policy_id = ziti_admin.create(
        "service-policies",
        {
            "name": ziti_unique("sp"),
            "type": "Dial",
            "semantic": "AnyOf",
            "identityRoles": [f"@{identity_id}"],
            "serviceRoles": ["#all"],
        },
    )
    # A dangling @id planted behind the cascades' back, and derived links knocked out of step.
    record = ctl.store.get("service_policies", policy_id)
    ctl.store.put("service_policies", policy_id, {**record, "identity_roles": [f"@{identity_id}", "@ghost-identity"]})
    ctl.derived.engine.remove_service_policy(policy_id)

    ziti_admin.mgmt_ok("POST", "/database/check-data-integrity")
    descriptions = [r["description"] for r in finished_results(ziti_admin, ziti_app)["results"]]
    assert any("@ghost-identity" in d for d in descriptions)
    assert any("policy-derived links" in d for d in descriptions)

    ziti_admin.mgmt_ok("POST", "/database/fix-data-integrity")
    assert all(r["fixed"] for r in finished_results(ziti_admin, ziti_app)["results"])
    assert ziti_admin.mgmt_ok("GET", f"/service-policies/{policy_id}")["identityRoles"] == [f"@{identity_id}"]
    assert policy_id in ctl.derived.engine.policies_of("identities", identity_id, "servicePolicies")
    ziti_admin.mgmt_ok("POST", "/database/check-data-integrity")
    assert finished_results(ziti_admin, ziti_app)["results"] == []


def test_one_integrity_run_at_a_time_across_check_and_fix(ziti_app):
    # In-process on this thread: holding the store lock keeps the background run waiting.
    with inprocess(ziti_app) as http:
        ziti_admin = ZitiClient(http).signed_in("admin", "admin")
        with ziti_app.controller.store.lock:
            assert ziti_admin.mgmt("POST", "/database/check-data-integrity").status_code == 202
            assert_error(ziti_admin.mgmt("POST", "/database/fix-data-integrity"), 429, "RATE_LIMITED")
            assert_error(ziti_admin.mgmt("POST", "/database/check-data-integrity"), 429, "RATE_LIMITED")
            assert ziti_admin.mgmt_ok("GET", "/database/data-integrity-results")["inProgress"] is True
        assert ziti_app.controller.ops.integrity.join(timeout=30)
        assert ziti_admin.mgmt("POST", "/database/fix-data-integrity").status_code == 202


# -- identity trace ---------------------------------------------------------------------------


def test_trace_tags_the_identity_events_until_it_ends(
    ziti, ziti_admin, ziti_app, make_identity, ziti_clock, ziti_unique
):
    identity_id = make_identity(ziti_unique("traced"), password="pass-word", username="traced-user")
    detail = ziti_admin.mgmt_ok(
        "PUT",
        f"/identities/{identity_id}/trace",
        json={"enabled": True, "duration": "1m30s", "traceId": "trace-1", "channels": ["auth"]},
    )
    assert detail == {"enabled": True, "traceId": "trace-1", "until": "2025-06-01T12:01:30.000Z"}
    events = ziti_app.controller.events
    ziti.signed_in("traced-user", "pass-word")
    assert events.query("authentication", identity_id=identity_id)[-1]["trace_id"] == "trace-1"
    ziti_clock.advance(seconds=91)
    ziti.signed_in("traced-user", "pass-word")
    assert "trace_id" not in events.query("authentication", identity_id=identity_id)[-1]


def test_trace_defaults_disable_and_errors(ziti_admin, make_identity):
    identity_id = make_identity()
    detail = ziti_admin.mgmt_ok("PUT", f"/identities/{identity_id}/trace", json={"enabled": True})
    assert detail["enabled"] is True and detail["traceId"] and detail["until"] == "2025-06-01T12:10:00.000Z"
    off = ziti_admin.mgmt_ok("PUT", f"/identities/{identity_id}/trace", json={"enabled": False})
    assert off["enabled"] is False and off["traceId"] == detail["traceId"]
    for duration in ("soon", "2562048h", "99999999999999999999h"):  # past Go's int64 nanoseconds: invalid
        response = ziti_admin.mgmt(
            "PUT", f"/identities/{identity_id}/trace", json={"enabled": True, "duration": duration}
        )
        assert_error(response, 400, "COULD_NOT_VALIDATE", "duration")
    assert_error(ziti_admin.mgmt("PUT", "/identities/nobody/trace", json={"enabled": True}), 404, "NOT_FOUND")


# -- authentication rate limit ----------------------------------------------------------------


def test_authentication_is_not_rate_limited_by_default(ziti):
    assert all(login(ziti, "admin", "wrong-pass").status_code == 401 for _ in range(25))


@pytest.mark.parametrize(
    "ziti_config", [Config(extra={"auth_rate_limit": {"max_requests": 3, "window_seconds": 10}})], ids=["limited"]
)
def test_configured_auth_rate_limit_answers_429_until_the_window_passes(ziti, ziti_clock):
    assert [login(ziti, "admin", "admin").status_code for _ in range(3)] == [200, 200, 200]
    response = login(ziti, "admin", "admin")
    error = assert_error(response, 429, "SERVER_TOO_MANY_REQUESTS")
    assert "slow your request rate" in error["message"]
    assert ziti.edge("GET", "/version").status_code == 200
    ziti_clock.advance(seconds=10)
    assert login(ziti, "admin", "admin").status_code == 200


# -- 503 when the store cannot write ---------------------------------------------------------


class FullDisk:
    """A journal segment file that fails every write as a full disk does."""

    def __init__(self, real):
        self.real = real

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_full_disk_answers_503_and_loses_nothing(tmp_path, ziti_clock, ziti_unique):
    config = Config(data_dir=tmp_path, fsync=False)
    with controller(config, ziti_clock) as (app, ziti):
        ziti_admin = ziti.signed_in("admin", "admin")
        kept = ziti_admin.create("identities", {"name": "kept", "type": "User", "isAdmin": False})
        segment = app.controller.store._journal
        segment._file = FullDisk(segment._file)
        response = ziti_admin.mgmt("POST", "/identities", json={"name": "lost", "type": "User", "isAdmin": False})
        assert_error(response, 503, "STORE_UNAVAILABLE")
        assert ziti_admin.mgmt_ok("GET", f"/identities/{kept}")["name"] == "kept"
        assert not ziti_admin.mgmt_ok("GET", "/identities", params={"filter": 'name="lost"'})
        segment._file = segment._file.real  # room again
        later = ziti_admin.create("identities", {"name": "later", "type": "User", "isAdmin": False})
    with controller(config, ziti_clock) as (_, ziti):
        ziti_admin = ziti.signed_in("admin", "admin")
        names = {i["name"] for i in ziti_admin.mgmt_ok("GET", "/identities", params={"limit": 500})}
        assert {"kept", "later"} <= names and "lost" not in names and later


def test_read_only_data_folder_serves_reads_and_answers_503_to_writes(tmp_path, ziti_clock, monkeypatch):
    config = Config(data_dir=tmp_path, fsync=False)
    with controller(config, ziti_clock):
        pass

    def read_only(self, path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(journal.Journal, "_open_file", read_only)
    with controller(config, ziti_clock) as (_, ziti):
        assert ziti.edge("GET", "/version").status_code == 200
        assert_error(login(ziti, "admin", "admin"), 503, "STORE_UNAVAILABLE")
    monkeypatch.undo()
    with controller(config, ziti_clock) as (_, ziti):
        assert login(ziti, "admin", "admin").status_code == 200
