"""Entity change events name the request that made the change, passed explicitly as a ``ChangeContext``."""

from __future__ import annotations


def source_of(event: dict) -> dict | None:
    return (event.get("metadata") or {}).get("source")


def test_create_patch_and_delete_through_http_name_their_request(ziti_admin, ziti_app, ziti_unique):
    events = ziti_app.controller.events
    service_id = ziti_admin.create("services", {"name": ziti_unique("cc"), "encryptionRequired": True})
    ziti_admin.mgmt_ok("PATCH", f"/services/{service_id}", json={"roleAttributes": ["blue"]})
    ziti_admin.mgmt_ok("DELETE", f"/services/{service_id}")

    changes = events.query("entityChange", entityType="services", entityId=service_id)
    sources = [source_of(event) for event in changes]
    assert [event["eventType"] for event in changes] == ["created", "updated", "deleted"]
    assert [(s["type"], s["method"]) for s in sources] == [("rest", "POST"), ("rest", "PATCH"), ("rest", "DELETE")]
    assert [s["path"] for s in sources] == [
        "/edge/management/v1/services",
        f"/edge/management/v1/services/{service_id}",
        f"/edge/management/v1/services/{service_id}",
    ]
    request_ids = [s["requestId"] for s in sources]
    assert all(isinstance(r, str) and r for r in request_ids) and len(set(request_ids)) == 3
    assert all(s["remoteAddr"] for s in sources)


def test_one_request_writing_several_records_names_itself_on_each(ziti_admin, ziti_app, ziti_unique):
    events = ziti_app.controller.events
    identity_id = ziti_admin.create(
        "identities", {"name": ziti_unique("cc-id"), "type": "User", "isAdmin": False, "enrollment": {"ott": True}}
    )
    created = events.query("entityChange", event_type="created", where=lambda e: _names(e, identity_id))
    assert {e["entityType"] for e in created} >= {"identities", "enrollments"}
    assert {source_of(e)["requestId"] for e in created} == {source_of(created[0])["requestId"]}


def _names(event: dict, identity_id: str) -> bool:
    return event.get("entityId") == identity_id or (event.get("finalState") or {}).get("identity_id") == identity_id


def test_writes_outside_a_request_carry_no_source(ziti_admin, ziti, ziti_app, ziti_clock, ziti_unique):
    ctl, events = ziti_app.controller, ziti_app.controller.events
    service_id = ziti_admin.create("services", {"name": ziti_unique("cc-direct"), "encryptionRequired": True})
    ctl.access.services.patch(service_id, {"roleAttributes": ["direct"]})
    updated = events.query("entityChange", event_type="updated", entityId=service_id)
    assert len(updated) == 1 and "metadata" not in updated[0]

    session_id = ziti.signed_in("admin", "admin").mgmt_ok("GET", "/current-api-session")["id"]
    ziti_clock.advance(minutes=31)
    assert ctl.accounts.api_sessions.sweep() >= 1
    deleted = events.query("entityChange", event_type="deleted", entityType="apiSessions", entityId=session_id)
    assert len(deleted) == 1 and "metadata" not in deleted[0]


def test_oidc_second_factor_and_logout_writes_name_their_request(ziti_admin, ziti, ziti_app, ziti_clock, ziti_unique):
    from harness.client import ZitiClient
    from harness.dataplane import flows
    from tests.flows.oidc_support import password_identity

    events, name = ziti_app.controller.events, ziti_unique("cc-oidc")
    password_identity(ziti_admin, name, "pw-12345")
    user = ZitiClient(ziti.http.__class__(transport=ziti.http._transport, base_url=ziti.http.base_url))
    user.now = ziti.now
    user.login(name, "pw-12345", api="client")
    device = flows.enroll_totp(user, at=ziti_clock.now())
    user.logout()

    # A recovery code answers the OIDC TOTP step: spending it writes the MFA record in that request.
    user.login(name, "pw-12345", oidc="c", totp=_RecoveryCode(device.recovery_codes[0]))
    spent = events.query("entityChange", event_type="updated", entityType="mfas")[-1]
    assert source_of(spent)["path"].endswith("/oidc/login/totp") and source_of(spent)["method"] == "POST"

    session_id = user.edge_ok("GET", "/current-api-session")["id"]
    user.logout()
    revoked = events.query("entityChange", entityType="revocations", entityId=session_id)
    assert revoked and source_of(revoked[-1])["method"] == "DELETE"
    assert source_of(revoked[-1])["path"] == "/edge/client/v1/current-api-session"


class _RecoveryCode:
    """Answers the TOTP step with one recovery code."""

    def __init__(self, code: str):
        self._code = code

    def code(self) -> str:
        return self._code
