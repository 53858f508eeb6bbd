"""A raw channel to the router for protocol tests: frames by hand, over a blocking TLS socket."""

from __future__ import annotations

import socket
import ssl
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from harness.dataplane.sync import load_identity_file
from router.wire import PREFIX, ContentType, Header, Message, decode, i32
from tests.support import recv_exactly

Message, ContentType, Header = Message, ContentType, Header  # re-exported for the tests


class RawChannel:
    def __init__(self, router_url: str, identity_file: Path, *, timeout: float = 10.0):
        self.client, identity = load_identity_file(identity_file)
        context = ssl.create_default_context(cadata=identity.ca_pem)
        folder = Path(tempfile.mkdtemp(prefix="raw-"))
        context.load_cert_chain(*identity.cert_key().write(folder))
        parts = urlsplit(router_url)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        self.sock = context.wrap_socket(sock, server_hostname=parts.hostname)
        self.seq = 0

    @property
    def token(self) -> str:
        return self.client.token

    def send(self, message: Message) -> Message:
        self.seq += 1
        message.seq = message.seq or self.seq
        self.sock.sendall(message.encode())
        return message

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> Message | None:
        """The next frame, or None when the router closed the channel."""
        head = self._exactly(PREFIX.size)
        if head is None:
            return None
        _, _, _, header_len, body_len = PREFIX.unpack(head)
        return decode(head + (self._exactly(header_len + body_len) or b""))

    def _exactly(self, size: int) -> bytes | None:
        return recv_exactly(self.sock, size)

    def hello(self, token: str | None = None) -> Message:
        self.send(Message(ContentType.HELLO, b"raw", {Header.SESSION_TOKEN: (token or self.token).encode()}))
        return self.recv()

    def reply_for(self, request: Message) -> bytes:
        return i32(request.seq)

    def close(self) -> None:
        self.sock.close()
        self.client.close()

    def __enter__(self) -> "RawChannel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def upper_after_eof(conn) -> None:
    """A bind handler that answers everything it read, upper-cased, once the dialer half-closed."""
    data = b""
    while chunk := conn.recv():
        data += chunk
    conn.sendall(data.upper())
