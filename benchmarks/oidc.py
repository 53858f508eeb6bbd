"""OIDC certificate logins and bearer-token requests, each beside its legacy anchor in the same run.

Run: ``python -m benchmarks.oidc [--logins N] [--requests N]``. The controller
runs in-process (memory store, no sockets), so the figures compare the
controller's own work: an OIDC login is authorize + cert login + callback +
code exchange (the C SDK's sequence); a legacy one is ``POST /authenticate``.
"""

from __future__ import annotations

import argparse
import time

from controller.app import create_app
from controller.config import Config
from harness import flows
from harness.client import ZitiClient
from harness.oidc import OidcLogin


def _rate(count: int, work) -> float:
    started = time.perf_counter()
    for _ in range(count):
        work()
    return count / (time.perf_counter() - started)


def _enrolled_client(app) -> ZitiClient:
    with ZitiClient.in_process(app) as admin:
        admin.login("admin", "admin")
        created = admin.management.create_identity(
            body={"name": "bench-oidc", "type": "Device", "isAdmin": False, "enrollment": {"ott": True}}
        )
        token = admin.management.detail_identity(created["id"])["enrollment"]["ott"]["jwt"]
        identity = flows.enroll_ott(admin, token)
    return flows.cert_client(app, identity)


def main(quick: bool = False, logins: int | None = None, requests: int | None = None) -> dict:
    logins = logins or (30 if quick else 150)
    requests = requests or (200 if quick else 1000)
    app = create_app(Config())
    client = _enrolled_client(app)
    legacy = _rate(logins, lambda: client.edge.call("authenticate", method="cert", body={}))
    flow = OidcLogin(client.http, "cert", "c")
    oidc = _rate(logins, flow.run)
    client.login_cert()
    zt_session = _rate(requests, client.edge.get_current_identity)
    client.login_cert(oidc="c")
    bearer = _rate(requests, client.edge.get_current_identity)
    client.close()
    app.controller.close()
    return {
        "legacy cert logins/s (anchor)": legacy,
        "OIDC cert logins/s (authorize+login+code exchange)": oidc,
        "OIDC / legacy login ratio": oidc / legacy,
        "GET /current-identity/s with zt-session (anchor)": zt_session,
        "GET /current-identity/s with bearer token": bearer,
        "bearer / zt-session ratio": bearer / zt_session,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.oidc")
    parser.add_argument("--logins", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None)
    args = parser.parse_args()
    for key, value in main(logins=args.logins, requests=args.requests).items():
        print(f"{key:<52} {value:,.2f}")
