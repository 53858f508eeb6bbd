"""Enrollments on the wire, and the identity view's ``enrollment`` map."""

from __future__ import annotations

from controller.api.mappers.entity import entity_ref, ref, render


def enrollment_view(record: dict, *, cas, enrollments, identities, routers) -> dict:
    out = render(enrollments, record)
    identity = identities.find(record.get("identity_id")) if record.get("identity_id") else None
    # NOTE(harden): the official documents require ``details``; the real controller's
    # enrollment model has no such field, so it is an empty object here.
    out.update({"jwt": record.get("jwt"), "details": {}})
    if identity:
        out["identity"] = {
            "_links": {"self": {"href": f"./identities/{identity['id']}"}},
            "id": identity["id"],
            "name": identity["name"],
            "urlName": "identities",
        }
    if record.get("ca_id"):
        out["ca"] = ref(cas, record["ca_id"])
    for kind, collection in (("edge_router", "edge-routers"), ("transit_router", "transit-routers")):
        router_id = record.get(kind + "_id")
        if router_id:
            wire = "edgeRouter" if kind == "edge_router" else "transitRouter"
            out[wire + "Id"] = router_id
            router = routers.find(router_id)
            out[wire] = entity_ref(collection, router_id, router.get("name") if router else None)
    return out


def enrollments_summary(identity_id: str, *, cas, enrollments) -> dict:
    """The identity view's ``enrollment`` map of pending enrollments."""
    enrollments, out = enrollments, {}
    for enrollment_id in sorted(enrollments.by_identity.get(identity_id)):
        record = enrollments.find(enrollment_id)
        entry = {
            "id": record["id"],
            "jwt": record.get("jwt"),
            "token": record["token"],
            "expiresAt": record["expires_at"],
        }
        if record.get("ca_id"):
            entry["caId"] = record["ca_id"]
            entry["ca"] = ref(cas, record["ca_id"])
        out[record["method"]] = entry
    return out
