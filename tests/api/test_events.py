"""The event timeline: entity changes, logins, logouts, sessions, MFA; JSON lines and the in-process stream."""

from __future__ import annotations

import orjson

from controller.app import create_app
from controller.config import Config
from harness.client import ZitiClient
from harness.client.transport import inprocess
from tests.support import code, enroll_verified, login


def events_of(controller_app):
    return controller_app.controller.events


def test_entity_changes_are_created_updated_deleted_with_the_clock_time(ziti_admin, ziti_app, ziti_clock, ziti_unique):
    events = events_of(ziti_app)
    ziti_clock.advance(seconds=5)
    identity_id = ziti_admin.create("identities", {"name": ziti_unique("ev"), "type": "User", "isAdmin": False})
    ziti_clock.advance(seconds=5)
    ziti_admin.mgmt_ok("PATCH", f"/identities/{identity_id}", json={"roleAttributes": ["red"]})
    ziti_clock.advance(seconds=5)
    ziti_admin.mgmt_ok("DELETE", f"/identities/{identity_id}")
    changes = events.query("entityChange", entityType="identities", entityId=identity_id)
    assert [e["eventType"] for e in changes] == ["created", "updated", "deleted"]
    assert [e["timestamp"] for e in changes] == [
        "2025-06-01T12:00:05.000Z",
        "2025-06-01T12:00:10.000Z",
        "2025-06-01T12:00:15.000Z",
    ]
    assert "initialState" not in changes[0] and changes[0]["finalState"]["id"] == identity_id
    assert changes[1]["initialState"]["role_attributes"] == [] and changes[1]["finalState"]["role_attributes"] == [
        "red"
    ]
    assert "finalState" not in changes[2] and changes[0]["eventId"] != changes[1]["eventId"]
    assert changes[0]["metadata"]["source"]["method"] == "POST"


def test_login_failure_logout_and_api_session_events(ziti, ziti_app, make_identity, ziti_unique):
    events = events_of(ziti_app)
    identity_id = make_identity(ziti_unique("ev-user"), password="pass-word", username="ev-user")
    login(ziti, "ev-user", "wrong-pass")
    session = ziti.signed_in("ev-user", "pass-word")
    session.mgmt_ok("DELETE", "/current-api-session")
    failed = events.query("authentication", event_type="fail")[-1]
    assert failed["reason"] == "INVALID_AUTH" and failed["auth_method"] == "password" and failed["success"] is False
    success = events.query("authentication", event_type="success", identity_id=identity_id)[-1]
    created = events.query("edge.apiSessions", event_type="created", identity_id=identity_id)[-1]
    assert success["api_session_id"] == created["id"] and created["type"] == "legacy"
    assert (
        events.query("authentication", event_type="logout", identity_id=identity_id)[-1]["api_session_id"]
        == created["id"]
    )
    assert events.query("edge.apiSessions", event_type="deleted", id=created["id"])


def test_expired_sessions_leave_a_deleted_event(ziti_admin, ziti, ziti_app, ziti_clock):
    events = events_of(ziti_app)
    other = ziti.signed_in("admin", "admin")
    session_id = other.mgmt_ok("GET", "/current-api-session")["id"]
    ziti_clock.advance(minutes=31)
    ziti.signed_in("admin", "admin").mgmt_ok("GET", "/api-sessions")
    deleted = events.query("edge.apiSessions", event_type="deleted", id=session_id)
    assert deleted and deleted[-1]["timestamp"] == "2025-06-01T12:31:00.000Z"


def test_service_sessions_in_the_store_become_edge_sessions_events(ziti_app):
    store, events = ziti_app.controller.store, events_of(ziti_app)
    record = {
        "id": "sess-1",
        "token": "secret-session-token",
        "type": "Dial",
        "api_session_id": "as-1",
        "identity_id": "i-1",
        "service_id": "svc-1",
    }
    store.put("sessions", "sess-1", record)
    store.delete("sessions", "sess-1")
    assert [e["event_type"] for e in events.query("edge.sessions", id="sess-1")] == ["created", "deleted"]
    created = events.query("edge.sessions", id="sess-1")[0]
    assert created["session_type"] == "Dial" and created["service_id"] == "svc-1"
    assert "secret-session-token" not in str(events.query())


def test_mfa_changes_are_events(ziti, ziti_app, make_identity, ziti_clock, ziti_unique):
    events = events_of(ziti_app)
    identity_id = make_identity(ziti_unique("ev-mfa"), password="pass-word", username="ev-mfa")
    session = ziti.signed_in("ev-mfa", "pass-word", api="client")
    secret, _ = enroll_verified(session, ziti_clock)
    partial = ziti.signed_in("ev-mfa", "pass-word", api="client")
    partial.edge("POST", "/authenticate/mfa", json={"code": "abcdef"})
    partial.edge_ok("POST", "/authenticate/mfa", json={"code": code(secret, ziti_clock)})
    partial.edge_ok("DELETE", "/current-identity/mfa", headers={"mfa-validation-code": code(secret, ziti_clock)})
    kinds = [e["event_type"] for e in events.query("edge.mfa", identity_id=identity_id)]
    assert kinds == ["enrolled", "verified", "authenticationFailed", "authenticated", "removed"]


def test_failed_service_requests_are_events(
    ziti_admin, ziti_app, make_service, make_policy, make_edge_router, make_client, ziti_unique
):
    identity_id, client = make_client(attrs=["fsr"])
    service_id = make_service(attrs=["fsr"])
    make_edge_router(attrs=["fsr"])
    make_policy("edge-router-policies", identityRoles=["#fsr"], edgeRouterRoles=["#fsr"])
    make_policy("service-edge-router-policies", serviceRoles=["#fsr"], edgeRouterRoles=["#fsr"])
    check_id = ziti_admin.create(
        "posture-checks", {"name": ziti_unique("domain"), "typeId": "DOMAIN", "domains": ["corp.example"]}
    )
    make_policy(
        "service-policies",
        type="Dial",
        identityRoles=["#fsr"],
        serviceRoles=["#fsr"],
        postureCheckRoles=[f"@{check_id}"],
    )
    response = client.edge("POST", "/sessions", json={"serviceId": service_id, "type": "Dial"})
    assert response.status_code == 409, response.text
    event = events_of(ziti_app).query("edge.failedServiceRequests", identity_id=identity_id)[-1]
    assert event["service_id"] == service_id and event["session_type"] == "Dial"
    assert event["policy_failures"][0]["checks"][0]["postureCheckId"] == check_id
    assert event["when"] == event["timestamp"]


def test_subscribers_see_later_events_until_they_unsubscribe(ziti_admin, ziti_app, ziti_unique):
    seen = []
    unsubscribe = events_of(ziti_app).subscribe(seen.append)
    ziti_admin.create("identities", {"name": ziti_unique("sub"), "type": "User", "isAdmin": False})
    assert any(e["namespace"] == "entityChange" and e["entityType"] == "identities" for e in seen)
    unsubscribe()
    count = len(seen)
    ziti_admin.create("identities", {"name": ziti_unique("sub"), "type": "User", "isAdmin": False})
    assert len(seen) == count


def test_query_filters_by_time_limit_and_predicate(ziti_admin, ziti_app, ziti_clock, ziti_unique):
    events = events_of(ziti_app)
    ziti_clock.advance(minutes=1)
    for _ in range(3):
        ziti_admin.create("identities", {"name": ziti_unique("q"), "type": "User", "isAdmin": False})
    recent = events.query("entityChange", since="2025-06-01T12:01:00Z", entityType="identities")
    assert len(recent) == 3
    assert (
        len(events.query("entityChange", until="2025-06-01T12:00:30Z", where=lambda e: e["entityType"] == "identities"))
        >= 1
    )
    assert events.query(limit=2) == events.query()[-2:]


def test_events_are_json_lines_in_the_data_folder_without_secrets(tmp_path, ziti_clock):
    app = create_app(Config(data_dir=tmp_path, fsync=False), clock=ziti_clock)
    try:
        with inprocess(app) as http:
            ziti = ZitiClient(http)
            ziti_admin = ziti.signed_in("admin", "admin")
            identity_id = ziti_admin.create(
                "identities", {"name": "lines", "type": "User", "isAdmin": False, "enrollment": {"ott": True}}
            )
            ziti_admin.create(
                "authenticators",
                {"identityId": identity_id, "method": "updb", "username": "lines-user", "password": "lines-pass"},
            )
            session = ziti.signed_in("lines-user", "lines-pass", api="client")
            enroll_verified(session, ziti_clock)
        store = app.controller.store
        secrets = [ziti_admin.token, session.token, "lines-pass"]
        for table in ("authenticators", "mfas", "enrollments"):
            for record in store.all(table):
                for key in ("password_hash", "salt", "secret", "token", "jwt"):
                    if record.get(key):
                        secrets.append(record[key])
                secrets.extend(record.get("recovery_codes") or [])
        lines = (tmp_path / "events.jsonl").read_bytes().splitlines()
        parsed = [orjson.loads(line) for line in lines]
        assert parsed == app.controller.events.query()
        text = b"\n".join(lines).decode()
        assert len(secrets) > 10 and not [s for s in secrets if s in text]
    finally:
        app.controller.close()


def _event_files(folder):
    return sorted(folder.glob("events.jsonl*"))


def test_events_file_rotates_by_size_and_keeps_a_bounded_number_of_files(tmp_path, ziti_clock):
    config = Config(data_dir=tmp_path, fsync=False, events_max_bytes=4_000, events_keep_files=2)
    for run in range(2):  # a restart appends to the current file and keeps the same bounds
        app = create_app(config, clock=ziti_clock)
        try:
            with inprocess(app) as http:
                ziti_admin = ZitiClient(http).signed_in("admin", "admin")
                for index in range(40):
                    ziti_admin.create("identities", {"name": f"rot-{run}-{index}", "type": "User", "isAdmin": False})
            newest = [orjson.loads(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()]
            assert newest == app.controller.events.query()[-len(newest) :]
        finally:
            app.controller.close()
        files = _event_files(tmp_path)
        assert [f.name for f in files] == ["events.jsonl", "events.jsonl.1", "events.jsonl.2"]
        assert all(0 < f.stat().st_size <= 4_000 for f in files)
    older = [orjson.loads(line) for line in (tmp_path / "events.jsonl.1").read_bytes().splitlines()]
    assert older[-1]["timestamp"] <= newest[0]["timestamp"] and older[-1] != newest[0]


def test_events_file_with_no_kept_files_starts_over(tmp_path, ziti_clock):
    app = create_app(
        Config(data_dir=tmp_path, fsync=False, events_max_bytes=3_000, events_keep_files=0), clock=ziti_clock
    )
    try:
        with inprocess(app) as http:
            ziti_admin = ZitiClient(http).signed_in("admin", "admin")
            for index in range(30):
                ziti_admin.create("identities", {"name": f"zero-{index}", "type": "User", "isAdmin": False})
    finally:
        app.controller.close()
    assert [f.name for f in _event_files(tmp_path)] == ["events.jsonl"]
    assert (tmp_path / "events.jsonl").stat().st_size <= 3_000
