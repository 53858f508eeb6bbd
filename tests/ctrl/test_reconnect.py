"""Reconnects of the control channel are invisible: a controller restart, with process routers and with the embedded
router, and a paused router. Routers run as their own processes (``harness.processes.routers``); the controller restarts on
its data folder and ports (``LocalController.restart``), as ``python -m controller`` restarted by a user."""

from __future__ import annotations

import logging
import subprocess

import pytest

from harness.client import ZitiClient
from harness.dataplane import DialError, flows
from harness.dataplane.sync import SyncDataPlane, echo, load_identity_file
from harness.processes.quickstart import new_quickstart
from harness.processes.routers import RouterNetwork, linked_pairs
from harness.processes.server import LocalController
from router.wire import ContentType as CT
from router.wire import Header, Message, u32
from tests.ctrl.support import terminators_on, wait_until
from tests.ctrl.test_multi_hop_process import embedded_router, split_routers
from tests.router.raw import RawChannel

#: generous bounds for polls (the 2 s targets are measured by the benchmark, not asserted here)
BACK = 15.0


@pytest.fixture
def controller(tmp_path):
    """A controller of this test alone (it restarts), its data in ``tmp_path``; control channel on, no policies."""
    local = LocalController(data_dir=tmp_path / "ctrl", ctrl=True)
    local.start()
    try:
        yield local
    finally:
        local.stop()


def admin_of(local: LocalController) -> ZitiClient:
    client = ZitiClient.connect(local.url)
    client.login("admin", local.config.admin_password)
    return client


def relogin(network: RouterNetwork, local: LocalController) -> ZitiClient:
    """After a restart: one new admin client for the network and its routers."""
    network.admin.close()
    network.admin = admin_of(local)
    for router in network:
        router.admin = network.admin
    return network.admin


def echoes(plane: SyncDataPlane, service: str, text: bytes) -> bool:
    with plane.dial(service) as conn:
        conn.sendall(text)
        return conn.recv_exactly(len(text)) == text


def test_a_controller_restart_keeps_the_link_between_process_routers_and_dials_cross_it(
    controller, tmp_path, ziti_unique
):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-a", roles=["a"])
    network.add("er-b", roles=["b"], links=["er-a"])
    try:
        network.start()
        a, b = network["er-a"], network["er-b"]
        stem = ziti_unique("restart")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=a.url)
        split_routers(admin, stem, binder_router=a.id, dialer_router=b.id)
        with SyncDataPlane.from_identity_file(qs.binder) as host:
            host.bind(qs.service, echo)
            wait_until(lambda: terminators_on(admin, a.id), what="the binder's terminator")

            controller.restart()
            admin = relogin(network, controller)
            wait_until(lambda: frozenset((a.id, b.id)) in linked_pairs(admin), BACK, "the link listed again")
            wait_until(lambda: terminators_on(admin, a.id), BACK, "the binder's terminator again")
            b.wait_online(BACK)  # the link may be listed from a's reconcile before b's: its SDK listener then
            with SyncDataPlane.from_identity_file(qs.dialer) as guest:
                assert echoes(guest, qs.service, b"across the link after a restart")
    finally:
        network.stop_routers()
        network.admin.close()


def test_a_controller_restart_relinks_the_embedded_router_and_the_open_sdk_channel_dials_again(tmp_path, ziti_unique):
    local = LocalController(data_dir=tmp_path / "ctrl", ctrl=True, router=True).start()
    network = RouterNetwork(admin_of(local), tmp_path / "routers")
    network.add("er-p", roles=["p"])
    try:
        network.start()
        admin, process, embedded = network.admin, network["er-p"], embedded_router(network.admin)
        wait_until(lambda: frozenset((process.id, embedded["id"])) in linked_pairs(admin), what="the first link")
        stem = ziti_unique("embedded")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=local.https_url, router_url=process.url)
        split_routers(admin, stem, binder_router=embedded["id"], dialer_router=process.id)
        with SyncDataPlane.from_identity_file(qs.dialer) as guest:
            with SyncDataPlane.from_identity_file(qs.binder) as host:
                host.bind(qs.service, echo)
                wait_until(lambda: terminators_on(admin, embedded["id"]), what="the binder's terminator")
                assert echoes(guest, qs.service, b"process to embedded")

            local.restart()  # the embedded router restarts with it; the process router and its SDK channel stay
            admin = relogin(network, local)
            wait_until(
                lambda: frozenset((process.id, embedded["id"])) in linked_pairs(admin), BACK, "the link made again"
            )
            with SyncDataPlane.from_identity_file(qs.binder) as host:
                host.bind(qs.service, echo)
                wait_until(lambda: terminators_on(admin, embedded["id"]), BACK, "the binder's terminator again")
                assert echoes(guest, qs.service, b"again after the restart")
                assert len(guest._plane._channels) == 1
    finally:
        network.stop_routers()
        network.admin.close()
        local.stop()


@pytest.mark.parametrize("reconnect", ["controller restart", "router paused"])
def test_an_sdk_channel_open_across_a_control_reconnect_dials_again(
    controller, tmp_path, ziti_unique, reconnect, caplog
):
    caplog.set_level(logging.INFO, logger="controller.ctrl")
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-one", roles=["one"])
    try:
        network.start()
        router = network["er-one"]
        stem = ziti_unique("again")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=router.url)
        split_routers(admin, stem, binder_router=router.id, dialer_router=router.id)
        with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
            host.bind(qs.service, echo)
            wait_until(lambda: terminators_on(admin, router.id), what="the binder's terminator")
            assert echoes(guest, qs.service, b"before")

            if reconnect == "controller restart":
                controller.restart()
                admin = relogin(network, controller)
            else:
                router.pause()
                try:  # paused past the controller's heartbeat timeout (3 s): it goes offline
                    wait_until(lambda: not router.online(), BACK, "the paused router offline")
                finally:
                    router.resume()
            router.wait_online(BACK)
            wait_until(lambda: terminators_on(admin, router.id), BACK, "the binder's terminator again")
            # the dialer's channel to the router stayed open: the same channel dials again
            assert echoes(guest, qs.service, b"after the reconnect")
            assert len(guest._plane._channels) == 1
            # one line per reconnect says what was reconciled: here the binder's and the dialer's channels
            lines = [
                r.getMessage() for r in caplog.records if "er-one" in r.getMessage() and "reconciled" in r.getMessage()
            ]
            assert len(lines) == 1 and "1 terminators (" in lines[0] and "2 SDK channels (0 refused)" in lines[0]
    finally:
        network.stop_routers()
        network.admin.close()


def test_a_paused_listening_router_gets_its_link_back(controller, tmp_path):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-l1", roles=["l"])
    try:
        network.start()
        network.add("er-l2", roles=["l"], links=["er-l1"])
        network.start()  # the newer router dials: er-l1 listens
        ids = {router.id: router for router in network}
        [link] = network.links_between("er-l1", "er-l2")
        listener = ids[link["destRouter"]["id"]]
        listener.pause()
        try:  # the controller marks it offline, and its peer drops the link
            wait_until(lambda: not listener.online(), BACK, "the paused router offline")
            wait_until(lambda: not network.links_between("er-l1", "er-l2"), BACK, "the link dropped")
        finally:
            listener.resume()
        listener.wait_online(BACK)
        network.wait_linked(timeout=BACK)
    finally:
        network.stop_routers()
        network.admin.close()


@pytest.mark.parametrize("across", [False, True], ids=["one router", "across a link"])
def test_a_dial_to_a_binder_that_closes_at_once_is_answered_at_once_with_the_reason(
    controller, tmp_path, ziti_unique, across
):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-h", roles=["h"])
    network.add("er-d", roles=["d"], links=["er-h"])
    try:
        network.start()
        host_router, dial_router = network["er-h"], network["er-d" if across else "er-h"]
        stem = ziti_unique("closes")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url="")
        split_routers(admin, stem, binder_router=host_router.id, dialer_router=dial_router.id)
        with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
            host.bind(qs.service, lambda conn: conn.close())
            wait_until(lambda: terminators_on(admin, host_router.id), what="the binder's terminator")
            guest.timeout = 8.0  # a dial must be answered well within the SDK's own timeout (10 s per request)
            for _ in range(3):
                try:
                    with guest.dial(qs.service) as conn:  # the host's close may also reach the dialer after
                        assert conn.recv() == b""
                except DialError as ex:
                    assert "the host closed the connection at once" in str(ex)
    finally:
        network.stop_routers()
        network.admin.close()


def test_while_the_controller_is_away_circuits_carry_on_and_a_hello_it_accepted_before_is_answered(
    controller, tmp_path, ziti_unique
):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-away", roles=["away"])
    try:
        network.start()
        router = network["er-away"]
        stem = ziti_unique("away")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=router.url)
        split_routers(admin, stem, binder_router=router.id, dialer_router=router.id)
        with SyncDataPlane.from_identity_file(qs.binder) as host, SyncDataPlane.from_identity_file(qs.dialer) as guest:
            host.bind(qs.service, echo)
            wait_until(lambda: terminators_on(admin, router.id), what="the binder's terminator")
            with guest.dial(qs.service) as conn, RawChannel(router.url, qs.dialer) as first:
                with RawChannel(router.url, qs.dialer) as second:
                    assert first.hello().bool_header(Header.RESULT_SUCCESS)
                    seen: dict = {}

                    def away() -> None:
                        conn.sendall(b"while away")
                        seen["echo"] = conn.recv_exactly(10)
                        seen["hello"] = second.hello(first.token)

                    controller.restart(while_down=away)
                    assert seen["echo"] == b"while away"
                    assert seen["hello"].bool_header(Header.RESULT_SUCCESS), seen["hello"].body
                conn.sendall(b"and after")
                assert conn.recv_exactly(9) == b"and after"
    finally:
        network.stop_routers()
        network.admin.close()


def test_a_real_sdk_connected_before_a_controller_restart_dials_again_on_the_same_context(
    real_sdk, controller, tmp_path, ziti_unique
):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-sdk", roles=["sdk"])
    processes: list[subprocess.Popen] = []

    def sdk(*args: str) -> subprocess.Popen:
        processes.append(real_sdk.popen(*args, stdin=subprocess.PIPE))
        return processes[-1]

    said: list[str] = []

    def ask(guest: subprocess.Popen, message: str) -> str | None:
        guest.stdin.write(message + "\n")
        guest.stdin.flush()
        for line in guest.stdout:
            said.append(line)
            if line.startswith(("ECHO", "FAILED")):
                return line.strip()
        return None  # the SDK process ended

    try:
        network.start()
        router = network["er-sdk"]
        stem = ziti_unique("realsdk")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=router.url)
        split_routers(admin, stem, binder_router=router.id, dialer_router=router.id)
        sdk("serve", str(qs.binder), qs.service, "host")
        wait_until(lambda: terminators_on(admin, router.id), 30, "the SDK's terminator")
        guest = sdk("dial-hold", str(qs.dialer), qs.service)
        assert ask(guest, "before") == "ECHO host:before"
        assert ask(guest, "again") == "ECHO host:again", "".join(said[-20:])

        controller.restart()
        admin = relogin(network, controller)
        router.wait_online(BACK)
        wait_until(lambda: terminators_on(admin, router.id), BACK, "the SDK's terminator again")
        assert ask(guest, "after") == "ECHO host:after", "".join(said[-20:])
    finally:
        for process in processes:
            process.kill()
            process.communicate(timeout=10)
        network.stop_routers()
        network.admin.close()


def test_while_the_controller_is_away_the_router_verifies_an_oidc_access_token_it_never_saw(
    controller, tmp_path, ziti_unique
):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-oidc", roles=["oidc"])
    try:
        network.start()
        router = network["er-oidc"]
        stem = ziti_unique("oidcaway")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=router.url)
        split_routers(admin, stem, binder_router=router.id, dialer_router=router.id)
        client, _ = load_identity_file(qs.dialer)
        client.logout()
        client.login_cert(oidc="c")
        token = client.session_token
        head, payload, signature = token.split(".")
        forged = f"{head}.{payload}.{signature[:-4]}{'AAAA' if signature[-4:] != 'AAAA' else 'BBBB'}"
        with RawChannel(router.url, qs.dialer) as genuine, RawChannel(router.url, qs.dialer) as tampered:
            seen: dict = {}

            def away() -> None:
                seen["genuine"] = genuine.hello(token)
                seen["tampered"] = tampered.hello(forged)

            controller.restart(while_down=away)
            assert seen["genuine"].bool_header(Header.RESULT_SUCCESS), seen["genuine"].body
            assert not seen["tampered"].bool_header(Header.RESULT_SUCCESS)
    finally:
        network.stop_routers()
        network.admin.close()


def test_a_channel_the_router_verified_alone_dials_under_its_identitys_name_once_the_controller_is_back(
    controller, tmp_path, ziti_unique
):
    """An OIDC access token checked by the router while the controller was away carries no name; the dial's answer
    does, and the host's Dial names the dialer (not an empty name)."""
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-named", roles=["named"])
    try:
        network.start()
        router = network["er-named"]
        stem = ziti_unique("named")
        qs = new_quickstart(
            admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=router.url, encrypted=False
        )
        split_routers(admin, stem, binder_router=router.id, dialer_router=router.id)
        client, _ = load_identity_file(qs.dialer)
        client.logout()
        client.login_cert(oidc="c")
        with RawChannel(router.url, qs.dialer) as guest, RawChannel(router.url, qs.binder) as host:
            seen: dict = {}
            controller.restart(while_down=lambda: seen.update(hello=guest.hello(client.session_token)))
            assert seen["hello"].bool_header(Header.RESULT_SUCCESS), seen["hello"].body
            admin = relogin(network, controller)
            router.wait_online(BACK)
            assert host.hello().bool_header(Header.RESULT_SUCCESS)
            bind = flows.dial(host.client, qs.service, "Bind")["token"].encode()
            host.send(Message(CT.BIND, bind, {Header.CONN_ID: u32(1), Header.SUPPORTS_BIND_SUCCESS: b"\x01"}))
            assert [host.recv().content_type, host.recv().content_type] == [CT.STATE_CONNECTED, CT.BIND_SUCCESS]
            token = flows.dial(client, qs.service, "Dial")["token"].encode()
            guest.send(Message(CT.CONNECT, token, {Header.CONN_ID: u32(1)}))
            dial = host.recv()
            assert dial.content_type == CT.DIAL, dial.body
            assert dial.str_header(Header.DIALER_IDENTITY_NAME) == f"{stem}-dialer"
    finally:
        network.stop_routers()
        network.admin.close()


def test_an_oidc_logout_closes_that_api_sessions_channels_on_a_process_router(controller, tmp_path, ziti_unique):
    admin = admin_of(controller)
    network = RouterNetwork(admin, tmp_path / "routers")
    network.add("er-logout", roles=["logout"])
    try:
        network.start()
        router = network["er-logout"]
        stem = ziti_unique("logout")
        qs = new_quickstart(admin, tmp_path / "ids", stem, controller_url=controller.https_url, router_url=router.url)
        split_routers(admin, stem, binder_router=router.id, dialer_router=router.id)
        client, _ = load_identity_file(qs.dialer)
        client.logout()
        client.login_cert(oidc="c")
        with RawChannel(router.url, qs.dialer) as channel:
            assert channel.hello(client.session_token).bool_header(Header.RESULT_SUCCESS)
            client.logout()  # revokes the OIDC API session (z_asid): the router is told and closes its channels
            assert channel.recv() is None
    finally:
        network.stop_routers()
        network.admin.close()
