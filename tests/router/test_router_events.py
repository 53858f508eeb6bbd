"""Dials, binds, closes and bytes moved on the controller's timeline; hosting per service."""

from __future__ import annotations

from harness.hosting import hosting
from harness.sync_dataplane import echo

#: what e2ee adds on the wire: a 24-byte stream header, then 17 bytes per message
HEADER, OVERHEAD = 24, 17


def test_an_echo_leaves_terminator_and_circuit_events_with_bytes_moved(ziti_quickstart, timeline):
    with (
        ziti_quickstart.dataplane(ziti_quickstart.binder) as host,
        ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest,
    ):
        host.bind(ziti_quickstart.service, echo)
        created = timeline.wait("terminator", "created")[-1]
        with guest.dial(ziti_quickstart.service) as conn:
            conn.sendall(b"hello")
            assert conn.recv_exactly(5) == b"hello"
        circuit = timeline.wait("circuit", "created")[-1]
        deleted = timeline.wait("circuit", "deleted", circuit_id=circuit["circuit_id"])[0]
    timeline.wait("terminator", "deleted", terminator_id=created["terminator_id"])
    assert circuit["service_id"] == created["service_id"] == deleted["service_id"]
    assert (circuit["terminator_id"], circuit["host_id"]) == (created["terminator_id"], created["identity_id"])
    assert deleted["bytes_from_dialer"] == deleted["bytes_from_host"] == HEADER + 5 + OVERHEAD


def test_a_refused_dial_is_a_failed_circuit_event(ziti_quickstart, timeline):
    with ziti_quickstart.dataplane(ziti_quickstart.dialer) as guest:
        try:
            guest.dial(ziti_quickstart.service)
        except ConnectionError:
            pass
    [failed] = timeline.wait("circuit", "failed")
    assert failed["reason"].endswith("has no terminators")


def test_hosting_says_which_services_have_terminators_right_now(ziti_quickstart):
    def row():
        return next(r for r in hosting(ziti_quickstart.admin) if r["service"] == ziti_quickstart.service)

    assert row()["terminators"] == 0
    with ziti_quickstart.dataplane(ziti_quickstart.binder) as host:
        host.bind(ziti_quickstart.service, echo)
        assert row() | {"serviceId": None} == {
            "service": ziti_quickstart.service,
            "serviceId": None,
            "terminators": 1,
            "routers": ["quickstart-router"],
            "hosts": [f"{ziti_quickstart.service}-binder"],
        }
