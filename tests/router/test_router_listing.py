"""The router as the REST APIs show it: online, its tls URL, terminators, connections."""

from __future__ import annotations

import socket
import ssl
from urllib.parse import urlsplit

from harness.dataplane import flows
from harness.dataplane.sync import echo, load_identity_file


def test_router_is_online_with_its_tls_url_in_every_listing(ziti_quickstart):
    url, admin = ziti_quickstart.router_url, ziti_quickstart.admin
    router = admin.management.call("listEdgeRouters", filter='name="quickstart-router"')[0]
    assert (router["isOnline"], router["isVerified"], router["supportedProtocols"]) == (True, True, {"tls": url})
    assert router["syncStatus"] == "SYNC_DONE" and router["hostname"] == "127.0.0.1"
    client, _ = load_identity_file(ziti_quickstart.dialer)
    with client:
        mine = client.edge.call("getCurrentIdentityEdgeRouters")
        assert [(r["name"], r["isOnline"], r["supportedProtocols"]) for r in mine] == [
            ("quickstart-router", True, {"tls": url})
        ]
        session = flows.dial(client, ziti_quickstart.service)
        assert [(r["urls"], r["supportedProtocols"]) for r in session["edgeRouters"]] == [({"tls": url}, {"tls": url})]
        service_routers = client.edge.call("listServiceEdgeRouters", session["serviceId"])
        assert [r["supportedProtocols"] for r in service_routers["edgeRouters"]] == [{"tls": url}]


def test_router_certificate_covers_the_advertised_names(ziti_quickstart):
    parts = urlsplit(ziti_quickstart.router_url)
    for name in ("127.0.0.1", "localhost"):
        context = ssl.create_default_context(cafile=str(ziti_quickstart.ca))
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
            try:
                with context.wrap_socket(sock, server_hostname=name) as tls:
                    assert tls.getpeercert()
            except ssl.SSLError as ex:
                # the router requires a client certificate; the hostname check happened before that
                assert "CERTIFICATE_VERIFY_FAILED" not in str(ex), name


def test_bind_makes_an_edge_terminator_that_goes_with_the_binder(ziti_quickstart, timeline):
    admin, service = ziti_quickstart.admin, ziti_quickstart.service
    query = f'service.name="{service}"'
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(service, echo)
        [terminator] = admin.management.call("listTerminators", filter=query)
        binder = admin.management.call("listIdentities", filter=f'name="{service}-binder"')[0]
        assert (terminator["binding"], terminator["router"]["name"], terminator["hostId"]) == (
            "edge",
            "quickstart-router",
            binder["id"],
        )
        assert terminator["address"] == terminator["id"]
    timeline.wait("terminator", "deleted", terminator_id=terminator["id"])
    assert admin.management.call("listTerminators", filter=query) == []


def test_identity_router_connection_follows_its_channels(ziti_quickstart, timeline):
    admin, service = ziti_quickstart.admin, ziti_quickstart.service

    def connected():
        identity = admin.management.call("listIdentities", filter=f'name="{service}-binder"')[0]
        return identity["hasEdgeRouterConnection"], identity["edgeRouterConnectionStatus"]

    assert connected() == (False, "offline")
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(service, echo)
        assert connected() == (True, "online")
        binder_id = timeline.wait("edge.router.connections", "connected")[-1]["identity_id"]
    timeline.wait("edge.router.connections", "disconnected", identity_id=binder_id)
    assert connected() == (False, "offline")


def test_a_removed_bind_session_removes_its_terminator(ziti_quickstart, timeline):
    admin, service = ziti_quickstart.admin, ziti_quickstart.service
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(service, echo)
        [session] = timeline.wait("edge.sessions", "created", session_type="Bind")
        admin.management.call("deleteSession", session["id"])
        timeline.wait("terminator", "deleted")
        assert admin.management.call("listTerminators", filter=f'service.name="{service}"') == []


def test_a_removed_api_session_closes_its_channels(ziti_quickstart, timeline):
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, echo)
        [connected] = timeline.wait("edge.router.connections", "connected")
        [api_session] = ziti_quickstart.admin.management.call(
            "listAPISessions", filter=f'identity="{connected["identity_id"]}"'
        )
        ziti_quickstart.admin.management.call("deleteAPISessions", api_session["id"])
        timeline.wait("edge.router.connections", "disconnected", identity_id=connected["identity_id"])
        timeline.wait("terminator", "deleted")
