"""Router presence with many routers: each its own url; a router going offline takes its connections."""

from __future__ import annotations

from controller.model.router_presence import RouterPresence


def test_many_routers_keep_their_own_urls_and_an_offline_router_takes_its_connections():
    presence = RouterPresence()
    for index in range(50):
        presence.online(f"r{index}", f"tls://127.0.0.1:{4000 + index}")
    presence.connection_changed("alice", True, "r1")
    presence.connection_changed("alice", True, "r2")
    presence.connection_changed("bob", True, "r2")

    assert presence.protocols("r7") == {"tls": "tls://127.0.0.1:4007"} and presence.hostname("r7") == "127.0.0.1"
    assert len(presence.online_routers()) == 50
    presence.offline("r2")  # killed: it never reported its channels closing
    assert presence.is_connected("alice") and not presence.is_connected("bob")
    assert not presence.is_online("r2") and presence.protocols("r2") == {}
    presence.connection_changed("alice", False, "r1")
    assert not presence.is_connected("alice")


def test_a_close_without_an_open_never_goes_negative():
    presence = RouterPresence()
    presence.connection_changed("carol", False, "r1")
    presence.connection_changed("carol", True, "r1")
    assert presence.is_connected("carol")
