"""Drive N keep-alive connections at a controller from this (separate) process.

Run by ``benchmarks.bulk`` as a subprocess, so the figures are not bounded by
a client sharing the server's interpreter::

    python -m benchmarks.drive_writes URL TOKEN CONNECTIONS REQUESTS {create|version}

Each connection sends REQUESTS/CONNECTIONS requests one after another
(``create``: ``POST /services`` with a unique name; ``version``: ``GET
/version``, the anchor) and the process prints ``{"seconds": s, "ok": n,
"failed": n}`` as JSON. Bounded in requests and by a 120 s deadline.
"""
from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import uuid
from urllib.parse import urlsplit

DEADLINE = 120.0
MGMT = "/edge/management/v1"


def _worker(url: str, token: str, count: int, kind: str, tally: list[int], deadline: float) -> None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"zt-session": token, "Content-Type": "application/json"}
    prefix = uuid.uuid4().hex[:8]
    for index in range(count):
        if time.monotonic() > deadline:
            break
        if kind == "create":
            body = json.dumps({"name": f"bench-{prefix}-{index}", "encryptionRequired": True})
            conn.request("POST", MGMT + "/services", body=body, headers=headers)
        else:
            conn.request("GET", "/version", headers=headers)
        reply = conn.getresponse()
        reply.read()
        tally[0 if reply.status < 300 else 1] += 1
    conn.close()


def drive(url: str, token: str, connections: int, requests: int, kind: str) -> dict:
    tallies = [[0, 0] for _ in range(connections)]
    deadline = time.monotonic() + DEADLINE
    threads = [threading.Thread(target=_worker, args=(url, token, requests // connections, kind, tally, deadline))
               for tally in tallies]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "ok": sum(t[0] for t in tallies), "failed": sum(t[1] for t in tallies)}


def main(argv: list[str]) -> int:
    url, token, connections, requests, kind = argv
    print(json.dumps(drive(url, token, int(connections), int(requests), kind)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
