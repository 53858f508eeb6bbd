"""The dial-path analysis on routers run as processes (``python -m router``): what it predicts before each
dial is the path the real circuit takes, as ``RouterNetwork.cut_link`` and ``slow_link`` change the links."""

from __future__ import annotations

import time

from harness.analysis.paths import dial_paths
from harness.dataplane.sync import SyncDataPlane, echo
from harness.processes.quickstart import new_quickstart


def test_the_predicted_path_is_the_circuit_s_as_links_are_cut_and_slowed(ziti_make_router_network, tmp_path):
    net = ziti_make_router_network(3)
    net.wait_linked([("router-1", "router-2"), ("router-1", "router-3"), ("router-2", "router-3")])
    qs = new_quickstart(net.admin, tmp_path, "way", controller_url=net.controller.https_url, router_url="")
    for who, router in (("binder", "router-2"), ("dialer", "router-1")):
        net.admin.management.create_edge_router_policy(
            body={
                "name": f"way-{who}",
                "semantic": "AnyOf",
                "identityRoles": [f"#way-{who}"],
                "edgeRouterRoles": [f"@{net[router].id}"],
            }
        )
    for policy in net.admin.management.list_edge_router_policies(filter='name = "all-endpoints-public-routers"'):
        net.admin.management.delete_edge_router_policy(policy["id"])  # only the two policies above decide

    def predicted() -> list[str]:
        found = dial_paths(net.admin, "way-dialer", "way")
        assert found.common == ["router-1"] and found.identity_routers == {"router-1": ["way-dialer"]}
        return found.likely.path

    def dialed() -> list[str]:
        with guest.dial("way") as conn:
            conn.sendall(b"x")
            assert conn.recv_exactly(1) == b"x"
            circuit = max(net.admin.fabric.list_circuits(), key=lambda c: c["createdAt"])  # this dial's, the newest
        return [node["name"] for node in circuit["path"]["nodes"]]

    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind("way", echo)
        deadline = time.monotonic() + 20
        while not net.admin.management.list_terminators(filter='service.name = "way"'):
            assert time.monotonic() < deadline, "the binder's terminator"
            time.sleep(0.02)
        net.slow_link("router-1", "router-3", 1000)  # static costs decide, whatever the measured latencies
        assert predicted() == dialed() == ["router-1", "router-2"]
        net.cut_link("router-1", "router-2")
        assert predicted() == dialed() == ["router-1", "router-3", "router-2"]  # around the cut
        net.cut_link("router-1", "router-3")
        found = dial_paths(net.admin, "way-dialer", "way")
        assert found.reason == (
            "no path: from router-1: no terminator can be reached: "
            "no live link path from router router-1 to router router-2"
        )
