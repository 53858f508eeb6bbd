"""Delete cascades derived from the entity declarations, seen through the management API."""

from __future__ import annotations

import pytest

from harness.client import ApiError


def router_link_config(client, unique) -> str:
    body = {"name": unique("link"), "configTypeId": "router.link.v1", "data": {"linkListeners": []}}
    return client.create("configs", body)


def test_deleting_a_config_removes_it_from_every_router_holding_it(ziti_admin, ziti_unique):
    config_id, kept_id = router_link_config(ziti_admin, ziti_unique), router_link_config(ziti_admin, ziti_unique)
    holders = [
        ziti_admin.create("transit-routers", {"name": ziti_unique("tr"), "configs": [config_id]}),
        ziti_admin.create("edge-routers", {"name": ziti_unique("er"), "configs": [config_id]}),
    ]
    other_id = ziti_admin.create("transit-routers", {"name": ziti_unique("tr"), "configs": [kept_id]})

    ziti_admin.mgmt_ok("DELETE", f"/configs/{config_id}")

    assert [ziti_admin.mgmt_ok("GET", f"/routers/{r}")["configs"] for r in holders] == [[], []]
    assert ziti_admin.mgmt_ok("GET", f"/routers/{other_id}")["configs"] == [kept_id]


def test_deleting_an_identity_deletes_what_references_it_and_nothing_else(ziti_admin, ziti_unique):
    identity_id = ziti_admin.create("identities", {"name": ziti_unique("id"), "type": "User", "isAdmin": False})
    other_id = ziti_admin.create("identities", {"name": ziti_unique("id"), "type": "User", "isAdmin": False})
    for owner in (identity_id, other_id):
        ziti_admin.create("enrollments", {"identityId": owner, "method": "ott", "expiresAt": "2099-01-01T00:00:00Z"})

    ziti_admin.mgmt_ok("DELETE", f"/identities/{identity_id}")

    owners = {e["identityId"] for e in ziti_admin.mgmt_ok("GET", "/enrollments", params={"limit": -1})}
    assert identity_id not in owners and other_id in owners
    with pytest.raises(ApiError) as raised:
        ziti_admin.mgmt_ok("GET", f"/identities/{identity_id}")
    assert raised.value.status == 404
