"""A bare asyncio TLS server answering every request with one small JSON reply: the fleet section's anchor.

Run: ``python -m benchmarks.bare_hello CERT_KEY_PEM`` prints ``ready PORT`` and serves until killed.
Each request head (no body: the anchor is polled with GETs) gets the same keep-alive reply, so a poll's
cost here is the floor for any Python server: one TLS record each way and the loop's work.
"""

from __future__ import annotations

import asyncio
import ssl
import sys

BODY = b'{"data":{"lastChangeAt":"2026-01-01T00:00:00.000Z"},"meta":{}}'
REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


class Hello(asyncio.Protocol):
    def connection_made(self, transport) -> None:
        self.transport, self.buffer = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            _, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.transport.write(REPLY)


async def serve(pem: str) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    server = await asyncio.get_running_loop().create_server(Hello, "127.0.0.1", 0, ssl=context, backlog=4096)
    print(f"ready {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    asyncio.run(serve(sys.argv[1]))
