"""A cluster member that loses only its own channel to a router (``RouterLink.disconnected``) marks it offline there
and does not tell the routers connected to it to drop their links to that router; a router that stops does."""

from __future__ import annotations

from controller.router_link import RouterLink


class Events:
    def __init__(self):
        self.subscribers = []

    def subscribe(self, fn):
        self.subscribers.append(fn)
        return lambda: self.subscribers.remove(fn)

    def emit(self, namespace, event_type, **fields):
        for fn in list(self.subscribers):
            fn({"namespace": namespace, "event_type": event_type, **fields})


def watching(router_id: str, events: Events) -> tuple[RouterLink, list]:
    link = object.__new__(RouterLink)  # only what watch() reads
    link.router_id, link.events, link._unwatch, link._presented = router_id, events, [], {}
    told: list = []
    link.watch(lambda kind, revoked_id: told.append((kind, revoked_id)))
    return link, told


def test_a_member_only_offline_is_not_pushed_to_other_routers_a_stopped_router_is():
    events = Events()
    _, told = watching("other-router", events)
    events.emit("router", "offline", router_id="r1", scope="member")
    assert told == []
    events.emit("router", "offline", router_id="r1")
    assert told == [("router", "r1")]
