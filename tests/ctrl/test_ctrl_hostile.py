"""Hostile input on the control channel closes that one connection with one log line; the listener
and the routers connected to it carry on."""

from __future__ import annotations

import socket
import ssl
import struct
import tempfile
import uuid
from pathlib import Path

import orjson
import pytest

from controller.ctrl.messages import VERSION
from harness.client import ZitiClient
from harness.client import pki as hp
from harness.dataplane.sync import load_identity_file
from harness.processes.quickstart import enroll_identity
from harness.processes.routers import RouterProcess
from router.control import parse_address
from tests.support import recv_exactly


class RawCtrl:
    """A blocking TLS connection to the control channel presenting ``cert_file``/``key_file``."""

    def __init__(self, address: str, cert_file: Path, key_file: Path, ca_pem: str):
        context = ssl.create_default_context(cadata=ca_pem)
        context.load_cert_chain(cert_file, key_file)
        host, port = parse_address(address)
        self.sock = context.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)

    def send(self, message: dict) -> None:
        self.send_bytes(frame(orjson.dumps(message)))

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> dict | None:
        """The next frame that is not a push (the controller pushes at connect and any time), or None once the
        controller closed the connection."""
        while True:
            head = self._exactly(4)
            message = None if head is None else orjson.loads(self._exactly(struct.unpack(">I", head)[0]))
            if message is None or message.get("type") != "push":
                return message

    def _exactly(self, size: int) -> bytes | None:
        return recv_exactly(self.sock, size)

    def close(self) -> None:
        self.sock.close()


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


@pytest.fixture(scope="module")
def routers(network, tmp_path_factory):
    """An enrolled router that does not run (its certificate speaks for the hostile peer), and a running one."""
    with ZitiClient.connect(network.local.url) as client:
        client.login("admin", "admin")
        folder = tmp_path_factory.mktemp("hostile")
        enrolled = RouterProcess(client, f"hostile-{uuid.uuid4().hex[:8]}", folder)
        bystander = RouterProcess(client, f"bystander-{uuid.uuid4().hex[:8]}", folder)
        enrolled.enroll()
        bystander.start()
        try:
            yield enrolled, bystander
        finally:
            bystander.stop()


@pytest.fixture
def enrolled(routers):
    return routers[0]


@pytest.fixture
def bystander(routers):
    return routers[1]


def connect(network, router) -> RawCtrl:
    return RawCtrl(
        network.listener.address,
        router.data_dir / "cert.pem",
        router.data_dir / "key.pem",
        (router.data_dir / "ca.pem").read_text(),
    )


BEFORE_HELLO = {
    "length beyond the limit": (b"\xff\xff\xff\xff", None),
    "zero length": (b"\x00\x00\x00\x00", None),
    "not JSON": (frame(b"{nope"), None),
    "JSON without a type": (frame(b'{"x": 1}'), None),
    "a request before hello": (frame(b'{"type": "request", "id": 1, "name": "hello", "args": {}}'), "EXPECTED_HELLO"),
    "an unknown protocol version": (frame(b'{"type": "hello", "version": 99}'), "UNSUPPORTED_VERSION"),
}


@pytest.mark.parametrize("data, code", BEFORE_HELLO.values(), ids=BEFORE_HELLO.keys())
def test_malformed_input_before_hello_closes_that_connection_only(network, enrolled, bystander, ctrl_log, data, code):
    hostile = connect(network, enrolled)
    hostile.send_bytes(data)
    answer = hostile.recv()
    if code is not None:
        assert answer["type"] == "error" and answer["code"] == code
        answer = hostile.recv()
    assert answer is None
    hostile.close()
    assert len(ctrl_log.wait()) == 1
    assert bystander.edge_listing()["isOnline"] and not enrolled.edge_listing()["isOnline"]


AFTER_HELLO = {
    "an unknown message": ({"type": "request", "id": 7, "name": "formatDisk", "args": {}}, "UNKNOWN_MESSAGE"),
    "an argument of the wrong type": (
        {"type": "request", "id": 7, "name": "online", "args": {"url": 5}},
        "INVALID_ARGS",
    ),
    "an unknown argument": (
        {"type": "request", "id": 7, "name": "removeTerminator", "args": {"terminatorId": "x", "extra": 1}},
        "INVALID_ARGS",
    ),
    "a url that is not tls": (
        {"type": "request", "id": 7, "name": "online", "args": {"url": "http://evil:80", "versionInfo": {}}},
        "INVALID_ARGS",
    ),
    "a version report with a field the real one has not": (
        {"type": "request", "id": 7, "name": "online", "args": {"url": "tls://a:1", "versionInfo": {"secret": "x"}}},
        "INVALID_ARGS",
    ),
    "an event in a namespace not the router's": (
        {
            "type": "request",
            "id": 7,
            "name": "emit",
            "args": {"namespace": "router", "eventType": "online", "fields": {}},
        },
        "INVALID_ARGS",
    ),
    "a hit report with a negative count": (
        {"type": "request", "id": 7, "name": "edgeFaultHits", "args": {"generation": 1, "hits": {"f": -5}}},
        "INVALID_ARGS",
    ),
    "a request without an id": ({"type": "request", "name": "trustedCas", "args": {}}, "INVALID_REQUEST"),
    "an unknown frame type": ({"type": "dance"}, "UNKNOWN_TYPE"),
}


@pytest.mark.parametrize("message, code", AFTER_HELLO.values(), ids=AFTER_HELLO.keys())
def test_hostile_requests_are_answered_with_an_error_and_close_the_connection(
    network, enrolled, bystander, ctrl_log, message, code
):
    hostile = connect(network, enrolled)
    hostile.send({"type": "hello", "version": VERSION})
    assert hostile.recv()["routerId"] == enrolled.id
    hostile.send(message)
    answer = hostile.recv()
    while answer is not None and answer["type"] == "ping":
        answer = hostile.recv()
    assert answer["type"] == "error" and answer["code"] == code
    assert hostile.recv() is None
    hostile.close()
    [line] = ctrl_log.wait()
    assert enrolled.id in line
    assert bystander.edge_listing()["isOnline"]


def test_a_peer_that_vanishes_after_hello_leaves_the_router_offline(network, enrolled, bystander, ctrl_log, timeline):
    peer = connect(network, enrolled)
    peer.send({"type": "hello", "version": VERSION})
    peer.recv()
    peer.send({"type": "request", "id": 1, "name": "online", "args": {"url": "tls://127.0.0.1:1", "versionInfo": {}}})
    assert peer.recv() == {"type": "reply", "id": 1, "result": None}
    assert enrolled.edge_listing()["isOnline"]
    peer.sock.shutdown(socket.SHUT_RDWR)
    peer.close()
    timeline.wait("router", "offline", router_id=enrolled.id, timeout=5)
    assert not enrolled.edge_listing()["isOnline"] and bystander.edge_listing()["isOnline"]
    assert ctrl_log.lines == []  # a vanished peer is ordinary: an info line, no warning


def test_a_foreign_certificate_is_refused_in_the_handshake(network, enrolled, bystander, ctrl_log):
    root = hp.make_root_ca("Foreign Root")
    folder = Path(tempfile.mkdtemp(prefix="foreign-"))
    cert, key = hp.make_leaf(root, enrolled.id).write(folder)
    hostile = RawCtrl(network.listener.address, cert, key, (enrolled.data_dir / "ca.pem").read_text())
    hostile.send({"type": "hello", "version": VERSION})
    assert hostile.recv() is None
    hostile.close()
    [line] = ctrl_log.wait()
    assert "TLS handshake" in line
    assert bystander.edge_listing()["isOnline"]


def test_an_identity_certificate_of_this_controller_is_not_a_router(network, admin, tmp_path, ziti_unique, ctrl_log):
    path = enroll_identity(admin, ziti_unique("not-a-router"), [], tmp_path / "id.json")
    client, identity = load_identity_file(path)
    client.close()
    cert, key = identity.cert_key().write(tmp_path)
    hostile = RawCtrl(network.listener.address, cert, key, identity.ca_pem)
    hostile.send({"type": "hello", "version": VERSION})
    assert hostile.recv() is None
    hostile.close()
    [line] = ctrl_log.wait()
    assert "no enrolled router has its certificate" in line
