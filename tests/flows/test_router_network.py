"""Networks with routers run as processes: declared in a network file and brought up by ``ziti-harness up``,
driven from Python (kill, restart, pause) and given to tests by the plugin's ``ziti_router_network``."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.client import ZitiClient
from harness.dataplane.sync import SyncDataPlane, echo
from harness.network import Network, apply, diff, export
from harness.network.check import NetworkProblems, check_file, problems
from harness.processes.routers import RouterError, linked_pairs

ROOT = Path(__file__).resolve().parents[2]
THREE = ROOT / "fixtures" / "networks" / "three-routers.yaml"
#: bounded waits for real processes (each router start costs about a second here)
DEADLINE = 30.0


# -- the network file ---------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "net.yaml"
    path.write_text(text)
    return path


def test_process_routers_and_their_links_are_declared_in_the_file_and_never_sent_to_the_controller(
    tmp_path, ziti_admin
):
    path = write(
        tmp_path,
        "edgeRouters:\n"
        "  - {name: er-a, roleAttributes: [west], isTunnelerEnabled: true, cost: 5, process: true, links: [er-b]}\n"
        "  - {name: er-b, process: true, links: []}\n"
        "  - {name: er-c}\n",
    )
    network = check_file(path)
    assert [item["name"] for item in network.process_routers()] == ["er-a", "er-b"]
    assert network.expected_links() == {frozenset(("er-a", "er-b"))}

    apply(ziti_admin, network)  # the harness's own fields are not part of the API's body (no 400)
    [er_a] = ziti_admin.mgmt_ok("GET", "/edge-routers", params={"filter": 'name = "er-a"'})
    assert (er_a["roleAttributes"], er_a["isTunnelerEnabled"], er_a["cost"]) == (["west"], True, 5)
    assert "process" not in er_a and "links" not in er_a
    assert diff(network, export(ziti_admin)) == []  # nor compared: an applied file is in step


def test_netcheck_reports_each_wrong_process_router_field_on_one_line(tmp_path):
    path = write(
        tmp_path,
        "edgeRouters:\n"
        "  - {name: er-a, process: true, links: [er-a, er-bb, er-c, er-c]}\n"
        "  - {name: er-b, process: true, tunnelerEnabled: true}\n"
        "  - {name: er-c, links: [er-a]}\n"
        "  - {name: er-d, process: 'yes'}\n",
    )
    with pytest.raises(NetworkProblems) as caught:
        check_file(path)
    assert sorted(caught.value.problems) == sorted(
        [
            f"{path}: edgeRouters/er-a: links: a router is not linked to itself; name another process router",
            f"{path}: edgeRouters/er-a: links: no router with process: true named 'er-bb' (did you mean 'er-b'?)",
            f"{path}: edgeRouters/er-a: links: 'er-c' is not run by the harness: declare it with process: true",
            f"{path}: edgeRouters/er-a: links: a router is named twice",
            f"{path}: edgeRouters/er-b: unknown field 'tunnelerEnabled' (did you mean 'isTunnelerEnabled'?)",
            f"{path}: edgeRouters/er-c: links: only a router with process: true is started, so only it can "
            "expect links",
            f"{path}: edgeRouters/er-d: process: 'yes' is not of type 'boolean'",
        ]
    )


NAMES = st.sampled_from(["er-a", "er-b", "er-c", "er-d"])


@given(routers=st.dictionaries(NAMES, st.tuples(st.booleans(), st.lists(NAMES, max_size=3)), max_size=4))
def test_links_pass_the_check_exactly_when_each_names_another_process_router_once(routers):
    data = {
        "edgeRouters": [
            {"name": name, "process": process, **({"links": links} if links else {})}
            for name, (process, links) in routers.items()
        ]
    }
    processes = {name for name, (process, _) in routers.items() if process}
    valid = all(
        not links or (process and len(set(links)) == len(links) and set(links) <= processes - {name})
        for name, (process, links) in routers.items()
    )
    found = problems(data, "net.yaml")
    assert (found == []) == valid, found
    assert all(line.startswith("net.yaml: edgeRouters/er-") and "\n" not in line for line in found)
    if valid:
        network = Network.checked(data)
        assert network.expected_links() == {
            frozenset((name, other)) for name, (_, links) in routers.items() for other in links
        }


def test_the_three_router_fixture_declares_three_process_routers():
    network = check_file(THREE)
    assert len(network.process_routers()) == 3


# -- ziti-harness up ----------------------------------------------------------------


def harness_up(network: Path, data: Path, *extra: str) -> tuple[subprocess.Popen, list[str], Path]:
    """``ziti-harness up`` as a subprocess; return it after its last router and link line (or its exit)."""
    errors = data.parent / "up.stderr"
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up", str(network), "--data", str(data), "--port", "0"]
            + ["--http-port", "0", "--no-router", "--router-wait", str(DEADLINE), *extra],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    declared = Network.from_yaml(network)
    wanted = len(declared.process_routers()) + len(declared.expected_links())
    lines: list[str] = []
    for line in proc.stdout:  # bounded: it prints every router and link line or exits within --router-wait
        lines.append(line.rstrip())
        if sum(line.startswith(("router ", "link ")) for line in lines) == wanted:
            break
    return proc, lines, errors


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def test_up_runs_the_three_routers_of_a_file_as_processes_online_and_stops_them_on_sigterm(tmp_path):
    data = tmp_path / "data"
    proc, lines, errors = harness_up(THREE, data)
    try:
        routers = [re.match(r"router (\S+) online at (tls://\S+) \(pid (\d+), log (\S+)\)$", x) for x in lines]
        routers = [m for m in routers if m]
        assert [m[1] for m in routers] == ["er-west", "er-east", "er-hub"], (lines, errors.read_text())
        http = next(re.search(r"(http://\S+?)/edge/management/v1", x)[1] for x in lines if x.startswith("  HTTP "))
        with ZitiClient.connect(http) as ziti_admin:
            ziti_admin.login("admin", "admin")
            fabric = {r["name"]: r for r in ziti_admin.fabric.iterate("listRouters")}
            edge = {r["name"]: r for r in ziti_admin.management.iterate("listEdgeRouters")}
        for m in routers:
            assert fabric[m[1]]["connected"] is True
            assert edge[m[1]]["supportedProtocols"] == {"tls": m[2]}
        assert (edge["er-east"]["cost"], edge["er-hub"]["isTunnelerEnabled"]) == (10, True)
        # the file's links were up before the ready lines: each pair printed, and the fabric shows them
        printed = {frozenset(m.groups()) for m in (re.match(r"link (\S+) <-> (\S+) connected$", x) for x in lines) if m}
        assert printed == {
            frozenset(pair) for pair in (("er-west", "er-east"), ("er-west", "er-hub"), ("er-east", "er-hub"))
        }
        with ZitiClient.connect(http) as ziti_admin:
            ziti_admin.login("admin", "admin")
            ids = {r["id"]: r["name"] for r in fabric.values()}
            live = {
                frozenset((ids[x["sourceRouter"]["id"]], ids[x["destRouter"]["id"]]))
                for x in ziti_admin.fabric.list_links()
            }
        assert printed <= live
        pids = [int(m[3]) for m in routers]
        assert all(not gone(pid) for pid in pids)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(DEADLINE)
    assert code == 0, errors.read_text()
    end = time.monotonic() + DEADLINE
    while not all(gone(pid) for pid in pids) and time.monotonic() < end:  # orphans reaped by init
        time.sleep(0.05)
    assert all(gone(pid) for pid in pids)
    folder = data / "routers"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
    assert not list(folder.glob("*.jwt"))  # enrollment JWTs are removed once used
    assert all("BEGIN" not in Path(m[4]).read_text() for m in routers)  # no key or certificate logged


def test_up_on_a_kept_data_folder_runs_the_routers_enrolled_there_again(tmp_path):
    path = write(tmp_path, "edgeRouters:\n  - {name: er-kept, process: true}\n")
    data = tmp_path / "data"
    for run in range(2):  # the second run re-enrolls nothing: its routers dial the control channel port they know
        proc, lines, errors = harness_up(path, data)
        try:
            assert [x.split()[1] for x in lines if x.startswith("router ")] == ["er-kept"], errors.read_text()
            assert f"applied {path}: {1 - run} change(s)" in lines
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(DEADLINE) == 0
    assert "error" not in errors.read_text()


def test_up_names_the_router_the_controller_refused_in_one_line_and_exits_3(tmp_path):
    path = write(
        tmp_path, "edgeRouters:\n  - {name: er-on, process: true}\n  - {name: er-off, process: true, disabled: true}\n"
    )
    proc, lines, errors = harness_up(path, tmp_path / "data")
    code = proc.wait(DEADLINE)
    assert code == 3
    [line] = [x for x in errors.read_text().splitlines() if x.startswith("error:")]
    assert line.startswith(f"error: {path}: router er-off exited with 3 at start (")
    assert "control channel" in line
    assert not [x for x in lines if x.startswith("router ")]


def test_up_waits_for_the_links_a_file_expects_and_prints_each_pair(tmp_path):
    path = write(
        tmp_path, "edgeRouters:\n  - {name: er-a, process: true, links: [er-b]}\n  - {name: er-b, process: true}\n"
    )
    proc, lines, errors = harness_up(path, tmp_path / "data", "--router-wait", "8")
    try:
        assert [x.split()[1] for x in lines if x.startswith("router ")] == ["er-a", "er-b"], errors.read_text()
        assert lines[-1] == "link er-a <-> er-b connected"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(DEADLINE) == 0


# -- from Python ----------------------------------------------------------------------


def test_kill_and_restart_through_the_python_api_go_offline_then_online(ziti_router_network):
    network = ziti_router_network
    router = network["router-1"]
    assert network.names == ["router-1", "router-2"] and router.online()
    router.kill()
    router.wait_offline(timeout=5)
    assert router.listing()["connected"] is False and not router.running
    with pytest.raises(RouterError, match=r"^routers router-1 and router-2 are not linked after 0.2 s"):
        network.wait_linked([("router-1", "router-2")], timeout=0.2)
    router.restart()
    router.wait_online(timeout=5)
    listed = router.edge_listing()
    assert listed["isOnline"] is True and listed["supportedProtocols"] == {"tls": router.url}


def test_a_paused_router_misses_heartbeats_goes_offline_and_comes_back_on_resume(ziti_make_router_network):
    network = ziti_make_router_network(1, ctrl_options={"heartbeat_seconds": 0.3, "heartbeat_timeout": 1.0})
    [router] = network
    assert network.names == ["router-1"] and router.online()
    router.pause()
    try:
        router.wait_offline(timeout=5)
    finally:
        router.resume()
    router.wait_online(timeout=5)
    assert router.running
    network.stop()  # stops the router and the controller (the factory would at the end of the test)
    assert router.proc.returncode == 0 and not network.controller.data_dir.exists()


def test_wait_linked_passes_with_no_links_expected_and_waits_for_expected_ones(ziti_router_network):
    network = ziti_router_network
    network.wait_linked([], timeout=0.1)  # links: [] expected: nothing to wait for
    try:
        network.wait_linked([("router-1", "router-2")], timeout=5)
    except RouterError:
        if not linked_pairs(network.admin):
            pytest.skip("no router reports links on this base (router links land on the links branch)")
        raise
    ids = {network["router-1"].id, network["router-2"].id}
    assert frozenset(ids) in linked_pairs(network.admin)


def test_the_router_quickstart_fixture_echoes_through_process_routers(ziti_router_quickstart):
    qs = ziti_router_quickstart
    assert yaml.safe_load(qs.dialer.read_text())  # an identity file (JSON is YAML)
    assert stat.S_IMODE(qs.dialer.stat().st_mode) == 0o600
    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind(qs.service, echo)
        with guest.dial(qs.service) as conn:
            conn.sendall(b"through a process router")
            assert conn.recv() == b"through a process router"


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_up_refuses_a_router_wait_that_is_not_a_positive_number_of_seconds(value):
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "up", str(THREE), "--router-wait", value],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ziti-harness up: argument --router-wait: ") and done.stderr.count("\n") == 1


def circuit_of_the_dial(ziti_admin, before: set[str]) -> dict:
    """The circuit a dial just made: its router reports it to the controller after the dial succeeded, so
    it may be listed a moment after the first bytes came back (polled with a deadline, never assumed)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        new = [circuit for circuit in ziti_admin.fabric.list_circuits() if circuit["id"] not in before]
        if new:
            return max(new, key=lambda c: c["createdAt"])
        assert time.monotonic() < deadline, "the dial's circuit was never listed"
        time.sleep(0.02)


def circuit_ids(ziti_admin) -> set[str]:
    return {circuit["id"] for circuit in ziti_admin.fabric.list_circuits()}


def test_a_dialer_whose_router_was_killed_dials_again_through_the_other_one(ziti_make_router_network, tmp_path):
    """The harness's data plane fails over as an SDK does: a router that refuses is skipped, and a session
    whose routers all refuse is fetched again (the restarted router listens on a new port)."""
    from harness.processes.quickstart import new_quickstart

    net = ziti_make_router_network(2)
    qs = new_quickstart(net.admin, tmp_path, "fo", controller_url=net.controller.https_url, router_url="")
    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind("fo", echo, every_router=True)
        deadline = time.monotonic() + 20
        while len(net.admin.management.list_terminators(filter='service.name = "fo"')) < 2:
            assert time.monotonic() < deadline, "the binder's two terminators"
            time.sleep(0.02)
        for _ in range(2):  # the second round kills the router the first one restarted
            before = circuit_ids(net.admin)
            with guest.dial("fo") as conn:
                conn.sendall(b"before")
                assert conn.recv_exactly(6) == b"before"
                circuit = circuit_of_the_dial(net.admin, before)
            used = net[circuit["path"]["nodes"][0]["name"]]
            used.kill()
            with guest.dial("fo") as conn:  # the same data plane: no new client, no new session by hand
                conn.sendall(b"after")
                assert conn.recv_exactly(5) == b"after"
            used.restart()
            used.wait_online()
            host.bind("fo", echo, every_router=True)


def test_a_cut_link_carries_no_new_circuit_until_restored_and_a_slow_one_is_avoided(ziti_make_router_network, tmp_path):
    from harness.processes.quickstart import new_quickstart

    net = ziti_make_router_network(3)
    net.wait_linked([("router-1", "router-2"), ("router-1", "router-3"), ("router-2", "router-3")])
    qs = new_quickstart(net.admin, tmp_path, "cut", controller_url=net.controller.https_url, router_url="")
    for who, router in (("binder", "router-2"), ("dialer", "router-1")):
        net.admin.management.create_edge_router_policy(
            body={
                "name": f"cut-{who}",
                "semantic": "AnyOf",
                "identityRoles": [f"#cut-{who}"],
                "edgeRouterRoles": [f"@{net[router].id}"],
            }
        )
    for policy in net.admin.management.list_edge_router_policies(filter='name = "all-endpoints-public-routers"'):
        net.admin.management.delete_edge_router_policy(policy["id"])  # only the two policies above decide

    def path() -> list[str]:
        before = circuit_ids(net.admin)
        with guest.dial("cut") as conn:
            conn.sendall(b"x")
            assert conn.recv_exactly(1) == b"x"
            circuit = circuit_of_the_dial(net.admin, before)
        return [node["name"] for node in circuit["path"]["nodes"]]

    with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
        host.bind("cut", echo)
        deadline = time.monotonic() + 20
        while not net.admin.management.list_terminators(filter='service.name = "cut"'):
            assert time.monotonic() < deadline, "the binder's terminator"
            time.sleep(0.02)
        first = path()  # direct or through router-3: the measured latencies decide
        assert (first[0], first[-1]) == ("router-1", "router-2")
        net.cut_link("router-1", "router-2")
        assert path() == ["router-1", "router-3", "router-2"]  # around the cut
        net.restore_link("router-1", "router-2")
        net.slow_link("router-1", "router-3", 1000)
        assert path() == ["router-1", "router-2"]  # restored, and the way around is slow now
        net.slow_link("router-1", "router-2", 5000)
        assert path() == ["router-1", "router-3", "router-2"]  # the slower of the two is avoided
