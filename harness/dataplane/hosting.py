"""Which services are hosted right now: terminators per service, from the management API.

Terminators come and go with binders (an SDK's Bind makes one on its edge
router, its leaving removes it), so this is the analyst's "who can be dialed
at this moment" beside the policy analysis's "who may dial".
"""

from __future__ import annotations

from collections import defaultdict

from harness.client import ZitiClient


def hosting(client: ZitiClient) -> list[dict]:
    """One row per service: its name, terminator count, routers and host identities.

    Args:
        client: a client logged in as an admin.

    Returns:
        Rows ``{service, serviceId, terminators, routers, hosts}`` sorted by service name;
        services without terminators have ``terminators == 0``.
    """
    by_service: dict[str, list[dict]] = defaultdict(list)
    for terminator in client.management.iterate("listTerminators", page_size=500):
        by_service[terminator["serviceId"]].append(terminator)
    identities = {}
    rows = []
    for service in client.management.iterate("listServices", page_size=500):
        found = by_service.get(service["id"], [])
        hosts = []
        for terminator in found:
            host_id = terminator.get("hostId")
            if host_id and host_id not in identities:
                identities[host_id] = client.management.detail_identity(host_id)["name"]
            if host_id:
                hosts.append(identities[host_id])
        rows.append(
            {
                "service": service["name"],
                "serviceId": service["id"],
                "terminators": len(found),
                "routers": sorted({t["router"]["name"] for t in found}),
                "hosts": sorted(set(hosts)),
            }
        )
    return sorted(rows, key=lambda r: r["service"])
