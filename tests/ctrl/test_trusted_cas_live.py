"""Trusted CAs are live on every router: a third-party CA created and verified while the embedded and a
process router run is trusted by both at once; disabled or deleted, it no longer is, and the channels
already open on its certificates close. No restart."""

from __future__ import annotations

import socket
import ssl
import time
from pathlib import Path
from urllib.parse import urlsplit

from harness.client import pki as hp
from harness.client.enroll import EnrolledIdentity
from harness.dataplane import flows
from harness.processes.quickstart import enroll_identity
from router.wire import ContentType, Header, Message
from tests.ctrl.support import wait_until
from tests.router.raw import RawChannel
from tests.support import warnings_of

#: the push reaches the routers at once; the bound only keeps a broken build from hanging
LIVE_WITHIN = 5.0


def accepted(router_url: str, cert: Path, key: Path, ca_pem: str) -> bool:
    """Whether the router's TLS handshake accepts this client certificate (it answers a hello either way)."""
    parts = urlsplit(router_url)
    context = ssl.create_default_context(cadata=ca_pem)
    context.load_cert_chain(cert, key)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname=parts.hostname) as tls:
                tls.sendall(Message(ContentType.HELLO, b"probe", {Header.SESSION_TOKEN: b"none"}, seq=1).encode())
                return bool(tls.recv(20))
        except (ssl.SSLError, ConnectionError):
            return False


def create_ca(admin, root, name: str) -> str:
    """A third-party CA for ``root`` with ott-CA enrollment and authentication on (not verified yet)."""
    body = {
        "name": name,
        "certPem": root.cert_pem,
        "isAutoCaEnrollmentEnabled": False,
        "isOttCaEnrollmentEnabled": True,
        "isAuthEnabled": True,
        "identityRoles": [],
    }
    return admin.create("cas", body)


def enroll_by_ca(network, admin, ca_id: str, device, name: str, path: Path) -> Path:
    """An identity ``name`` enrolled by ott-CA with ``device``'s certificate; its identity file at ``path``."""
    identity_id = admin.create(
        "identities", {"name": name, "type": "User", "isAdmin": False, "enrollment": {"ottca": ca_id}}
    )
    token = admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ottca"]["jwt"]
    identity = EnrolledIdentity(network.local.https_url, device.chain_pem, device.key_pem, flows.ca_bundle(admin))
    with flows.cert_client(None, identity, url=network.local.https_url) as presenting:
        flows.enroll_ottca(presenting, token)
    return flows.write_identity_file(identity, path)


def test_a_ca_verified_while_routers_run_is_trusted_by_all_at_once_and_stops_being_trusted_when_disabled(
    network, admin, make_router, tmp_path, ziti_unique
):
    process = make_router()
    routers = [network.local.router.url, process.ready["url"]]
    bundle = flows.ca_bundle(admin)
    root = hp.make_root_ca(ziti_unique("Live Root"))
    intermediate = hp.make_intermediate_ca(root, "Live Intermediate")
    device = hp.make_leaf(intermediate, "live-device")
    cert, key = device.write(tmp_path, "device")

    def trusted_everywhere(expected: bool) -> bool:
        return all(accepted(url, cert, key, bundle) is expected for url in routers)

    assert trusted_everywhere(False)
    ca_id = create_ca(admin, root, ziti_unique("live-ca"))
    assert trusted_everywhere(False)  # created, not verified yet
    flows.verify_ca(admin, ca_id, root)
    wait_until(lambda: trusted_everywhere(True), timeout=LIVE_WITHIN, what="the new CA trusted by every router")

    identity_file = enroll_by_ca(network, admin, ca_id, device, ziti_unique("live-id"), tmp_path / "live.json")
    for url in routers:
        with RawChannel(url, identity_file) as channel:
            assert channel.hello().bool_header(Header.RESULT_SUCCESS), url

    admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAuthEnabled": False})
    wait_until(lambda: trusted_everywhere(False), timeout=LIVE_WITHIN, what="the disabled CA refused by every router")
    admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAuthEnabled": True})
    wait_until(lambda: trusted_everywhere(True), timeout=LIVE_WITHIN, what="the re-enabled CA trusted again")
    admin.mgmt_ok("DELETE", f"/cas/{ca_id}")
    wait_until(lambda: trusted_everywhere(False), timeout=LIVE_WITHIN, what="the deleted CA refused by every router")


def closed_by_router(channel: RawChannel, within: float) -> bool:
    """Whether the router ends ``channel`` within ``within`` seconds (frames it sends meanwhile are skipped)."""
    end = time.monotonic() + within
    while (left := end - time.monotonic()) > 0:
        channel.sock.settimeout(left)
        try:
            if channel.recv() is None:
                return True
        except (TimeoutError, socket.timeout):
            return False
        except (ssl.SSLError, ConnectionError):
            return True
    return False


def test_open_channels_on_a_disabled_cas_certificates_close_and_others_stay(
    network, admin, make_router, tmp_path, ziti_unique
):
    process = make_router()
    routers = [network.local.router.url, process.ready["url"]]
    bundle = flows.ca_bundle(admin)
    root = hp.make_root_ca(ziti_unique("Open Root"))
    device = hp.make_leaf(hp.make_intermediate_ca(root, "Open Intermediate"), "open-device")
    ca_id = create_ca(admin, root, ziti_unique("open-ca"))
    flows.verify_ca(admin, ca_id, root)
    identity_name = ziti_unique("open-id")
    third_party = enroll_by_ca(network, admin, ca_id, device, identity_name, tmp_path / "open.json")
    wait_until(lambda: all(accepted(url, *device.write(tmp_path, "probe"), bundle) for url in routers), LIVE_WITHIN)
    own = enroll_identity(admin, ziti_unique("own-ca-id"), [], tmp_path / "own.json")

    channels = [RawChannel(url, path, timeout=LIVE_WITHIN) for url in routers for path in (third_party, own)]
    try:
        for channel in channels:
            assert channel.hello().bool_header(Header.RESULT_SUCCESS)
        with warnings_of("router") as embedded_log:
            admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAuthEnabled": False})
            for on_third_party in channels[0::2]:
                assert closed_by_router(on_third_party, LIVE_WITHIN), (
                    "a channel on the disabled CA's certificate stayed"
                )
        assert [line for line in embedded_log.lines if "no longer trusted" in line] == [
            f"router: closing the channel of {identity_name}: its certificate's CA is no longer trusted"
        ]
        for on_own_ca in channels[1::2]:
            assert not closed_by_router(on_own_ca, 0.3), "a channel on the controller's own CA was closed"
    finally:
        for channel in channels:
            channel.close()
