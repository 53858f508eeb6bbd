"""After a commit the listeners run in one documented order (``Controller._register_listeners``): derived state
first, the events last, so whoever hears of a change finds it everywhere the API reads."""

from __future__ import annotations


def test_an_events_subscriber_finds_a_new_service_through_a_filter_built_while_running(
    ziti_admin, ziti_app, ziti_unique
):
    name = ziti_unique("order")
    by_name = {"filter": f'name = "{name}"'}
    # the first list by this field builds its filter index now, long after the controller started
    assert ziti_admin.mgmt_ok("GET", "/services", params=by_name) == []
    services, found = ziti_app.controller.access.services, []

    def on_event(event: dict) -> None:
        if event["namespace"] == "entityChange" and event["entityType"] == "services":
            found.append((event["eventType"], [record["id"] for record in services.list(dict(by_name)).items]))

    unsubscribe = ziti_app.controller.events.subscribe(on_event)
    try:
        service_id = ziti_admin.create("services", {"name": name, "encryptionRequired": True})
        ziti_admin.mgmt_ok("DELETE", f"/services/{service_id}")
    finally:
        unsubscribe()
    assert found == [("created", [service_id]), ("deleted", [])]
