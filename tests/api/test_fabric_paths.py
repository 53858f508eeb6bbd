"""``GET /fabric/v1/routers/{id}/paths/{serviceId}``: where a dial entering at a router would go.

Routers and terminators go in through the APIs; presence and links, which only routers report, through
the controller's router presence and ``Fabric.link_up`` (the contract the control channel fills), as in
``test_fabric_api.py``. The dial-path analysis over this endpoint is checked against real dials in
``tests/router/test_dial_paths.py`` and against a brute-force oracle in ``tests/properties``.
"""

from __future__ import annotations

from datetime import datetime, timezone

from controller.fabric.state import Link
from tests.support import assert_error

WHEN = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def paths(client, router_id: str, service_id: str):
    return client.request("GET", f"/fabric/v1/routers/{router_id}/paths/{service_id}")


def test_a_path_answer_names_each_terminator_its_path_cost_and_chance(ziti_admin, ziti_app, ziti_unique):
    ctl = ziti_app.controller
    ids = {
        n: ziti_admin.create("edge-routers", {"name": ziti_unique(n), "cost": 2 if n == "mid" else 0})
        for n in ("in", "mid", "far", "off")
    }
    for router_id in (ids["in"], ids["mid"], ids["far"]):
        ctl.routing.router_presence.online(router_id, "tls://127.0.0.1:1")
    ctl.routing.fabric.link_up(Link("in-mid", ids["in"], ids["mid"], WHEN, static_cost=3))
    ctl.routing.fabric.link_up(Link("mid-far", ids["mid"], ids["far"], WHEN, static_cost=4))
    service = ziti_admin.create(
        "services", {"name": ziti_unique("svc"), "encryptionRequired": True, "terminatorStrategy": "weighted"}
    )
    on_far = ziti_admin.create(
        "terminators", {"service": service, "router": ids["far"], "binding": "edge", "address": "x", "cost": 1}
    )
    on_in = ziti_admin.create(
        "terminators",
        {
            "service": service,
            "router": ids["in"],
            "binding": "edge",
            "address": "y",
            "cost": 8,
            "precedence": "default",
        },
    )
    on_off = ziti_admin.create(
        "terminators", {"service": service, "router": ids["off"], "binding": "edge", "address": "z"}
    )

    response = paths(ziti_admin, ids["in"], service)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert (data["router"]["id"], data["service"]["id"], data["isOnline"]) == (ids["in"], service, True)
    assert (data["terminatorStrategy"], data["reachable"], data["reason"]) == ("weighted", True, "")
    by_id = {t["id"]: t for t in data["terminators"]}
    far = by_id[on_far]
    # in -> mid (link 3, entering mid costs 2) -> far (link 4): 9, plus the terminator's own 1
    assert (far["usable"], far["pathCost"], far["totalCost"], far["reason"]) == (True, 9, 10, "")
    assert [n["id"] for n in far["path"]["nodes"]] == [ids["in"], ids["mid"], ids["far"]]
    assert [ln["id"] for ln in far["path"]["links"]] == ["in-mid", "mid-far"]
    local = by_id[on_in]
    assert (local["pathCost"], local["totalCost"], local["path"]["links"]) == (0, 8, [])
    # weighted: 1/(1+total) each, shared out
    assert far["chance"] + local["chance"] == 1 and abs(far["chance"] - (1 / 11) / (1 / 11 + 1 / 9)) < 1e-5
    off = by_id[on_off]
    assert (off["usable"], off["chance"], off["path"]) == (False, 0, None)
    assert off["reason"] == f"its router {ids['off']} is offline"
    assert sorted(link["id"] for link in data["links"]) == ["in-mid", "mid-far"]
    assert data["links"][0]["staticCost"] in (3, 4)

    ctl.routing.fabric.update_link("mid-far", down=True)  # cut: only the local terminator is left
    data = paths(ziti_admin, ids["in"], service).json()["data"]
    far = next(t for t in data["terminators"] if t["id"] == on_far)
    assert far["reason"] == f"no live link path from router {ids['in']} to router {ids['far']}"
    assert next(t for t in data["terminators"] if t["id"] == on_in)["chance"] == 1

    data = paths(ziti_admin, ids["off"], service).json()["data"]
    assert (data["isOnline"], data["reachable"]) == (False, False)
    assert data["reason"] == f"router {ids['off']} is offline: no dial enters there"


def test_no_terminator_is_unreachable_with_the_reason(ziti_admin, ziti_app, ziti_unique):
    router = ziti_admin.create("edge-routers", {"name": ziti_unique("r")})
    ziti_app.controller.routing.router_presence.online(router, "tls://127.0.0.1:1")
    service = ziti_admin.create("services", {"name": ziti_unique("svc"), "encryptionRequired": True})
    data = paths(ziti_admin, router, service).json()["data"]
    assert (data["reachable"], data["terminators"], data["links"]) == (False, [], [])
    assert data["reason"] == f"service {service} has no terminators: nothing binds it"


def test_unknown_router_or_service_is_a_404_and_it_is_admin_only(ziti, ziti_admin, ziti_unique):
    router = ziti_admin.create("edge-routers", {"name": ziti_unique("r")})
    service = ziti_admin.create("services", {"name": ziti_unique("svc"), "encryptionRequired": True})
    assert_error(paths(ziti_admin, "nope", service), 404, "NOT_FOUND")
    assert_error(paths(ziti_admin, router, "nope"), 404, "NOT_FOUND")
    assert_error(paths(ziti, router, service), 401, "UNAUTHORIZED")
    user = ziti_unique("user")
    identity = ziti_admin.create("identities", {"name": user, "type": "User", "isAdmin": False})
    ziti_admin.create(
        "authenticators", {"identityId": identity, "method": "updb", "username": user, "password": "pw-12345"}
    )
    assert_error(paths(ziti.signed_in(user, "pw-12345"), router, service), 401, "UNAUTHORIZED")


def test_a_no_traversal_router_is_never_crossed_but_still_hosts(ziti_admin, ziti_app, ziti_unique):
    """``noTraversal`` (edge router PATCH, as the console sets it) keeps paths from crossing a router; a
    terminator on it is still reached."""
    ctl = ziti_app.controller
    ids = {n: ziti_admin.create("edge-routers", {"name": ziti_unique(n)}) for n in ("in", "mid", "far")}
    for router_id in ids.values():
        ctl.routing.router_presence.online(router_id, "tls://127.0.0.1:1")
    ctl.routing.fabric.link_up(Link("nt-in-mid", ids["in"], ids["mid"], WHEN, static_cost=1))
    ctl.routing.fabric.link_up(Link("nt-mid-far", ids["mid"], ids["far"], WHEN, static_cost=1))
    service = ziti_admin.create("services", {"name": ziti_unique("svc"), "encryptionRequired": True})
    on_far = ziti_admin.create(
        "terminators", {"service": service, "router": ids["far"], "binding": "edge", "address": "x"}
    )
    on_mid = ziti_admin.create(
        "terminators", {"service": service, "router": ids["mid"], "binding": "edge", "address": "y"}
    )

    def by_id():
        return {t["id"]: t for t in paths(ziti_admin, ids["in"], service).json()["data"]["terminators"]}

    assert by_id()[on_far]["usable"]
    ziti_admin.mgmt_ok("PATCH", f"/edge-routers/{ids['mid']}", json={"noTraversal": True})
    found = by_id()
    assert found[on_far]["reason"] == f"no live link path from router {ids['in']} to router {ids['far']}"
    assert found[on_mid]["usable"] and [n["id"] for n in found[on_mid]["path"]["nodes"]] == [ids["in"], ids["mid"]]
