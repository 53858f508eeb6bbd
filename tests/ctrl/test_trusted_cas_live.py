"""Trusted CAs are live on every router: a third-party CA created and verified while the embedded and a
process router run is trusted by both at once; disabled or deleted, it no longer is. No restart."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from urllib.parse import urlsplit

from harness import flows
from harness import pki as hp
from harness.enroll import EnrolledIdentity
from router.wire import ContentType, Header, Message
from tests.ctrl.support import wait_until
from tests.router.raw import RawChannel

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
    ca_id = admin.create(
        "cas",
        {
            "name": ziti_unique("live-ca"),
            "certPem": root.cert_pem,
            "isAutoCaEnrollmentEnabled": False,
            "isOttCaEnrollmentEnabled": True,
            "isAuthEnabled": True,
            "identityRoles": [],
        },
    )
    assert trusted_everywhere(False)  # created, not verified yet
    flows.verify_ca(admin, ca_id, root)
    wait_until(lambda: trusted_everywhere(True), timeout=LIVE_WITHIN, what="the new CA trusted by every router")

    identity_id = admin.create(
        "identities", {"name": ziti_unique("live-id"), "type": "User", "isAdmin": False, "enrollment": {"ottca": ca_id}}
    )
    token = admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ottca"]["jwt"]
    identity = EnrolledIdentity(network.local.https_url, device.chain_pem, device.key_pem, bundle)
    with flows.cert_client(None, identity, url=network.local.https_url) as presenting:
        flows.enroll_ottca(presenting, token)
    identity_file = flows.write_identity_file(identity, tmp_path / "live.json")
    for url in routers:
        with RawChannel(url, identity_file) as channel:
            assert channel.hello().bool_header(Header.RESULT_SUCCESS), url

    admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAuthEnabled": False})
    wait_until(lambda: trusted_everywhere(False), timeout=LIVE_WITHIN, what="the disabled CA refused by every router")
    admin.mgmt_ok("PATCH", f"/cas/{ca_id}", json={"isAuthEnabled": True})
    wait_until(lambda: trusted_everywhere(True), timeout=LIVE_WITHIN, what="the re-enabled CA trusted again")
    admin.mgmt_ok("DELETE", f"/cas/{ca_id}")
    wait_until(lambda: trusted_everywhere(False), timeout=LIVE_WITHIN, what="the deleted CA refused by every router")
