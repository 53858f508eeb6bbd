"""OIDC certificate logins and bearer-token requests, each beside its legacy anchor in the same run.

Run: ``python -m benchmarks.oidc [--logins N] [--requests N]``.

Logins are measured as the controller's own work: each request goes straight
to the WSGI app with the environ the TLS listener builds (client certificate
included), the same way for both logins, and only the app's CPU time is
counted (the thread's time inside the WSGI call, summed over a login's
requests), so no client's cost is: neither this driver's (the PKCE verifier
and challenge, the query and form encoding, picking the request id and code
out of the redirects, ~80 µs per OIDC login) nor a client library's (an SDK
in C or Go pays little per request; the harness's in-process httpx client
pays ~0.2 ms, four times per OIDC login, once per legacy one).
An OIDC login is the C SDK's sequence: authorize, cert login, callback, code
exchange; a legacy one is ``POST /authenticate?method=cert``. Both send the C
SDK's ``sdkInfo``/``envInfo``. The per-step cost is printed beside the figure,
with the cost of the token step's signatures, measured in the same run.

Times are CPU time (``time.thread_time`` around each WSGI call), so a machine
shared with other work changes the figures little: they say how many logins a
core serves, not how long one waited for a core. Rounds alternate legacy and
OIDC logins, so a load spike hits both; each figure is its best round. The
harness-client figures at the end are this process's CPU time
(``time.process_time``), client included, as before.

Access and ID tokens are signed with the TLS server certificate's key (as the
real controller does): RSA by default (the quickstart's ``ziti pki create
server``), so two RS256 signatures are the floor of an OIDC login; the refresh
token is an HS256 MAC under a secret derived from that key (the real
controller signs it with the key too: ``docs/architecture.md``, "OIDC
tokens"). The same figures follow for an EC (P-256, ES256) server key.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import secrets
import time
from collections import defaultdict
from urllib.parse import urlencode

from controller.app import create_app
from controller.config import Config
from controller.server.wsgi_bridge import PEER_CERTS_KEY, RequestHead, build_environ
from harness.client import ZitiClient
from harness.client.oidc import C_REDIRECT, OidcLogin
from harness.dataplane import flows

HOST = "controller.local"
SDK_BODY = (
    b'{"sdkInfo":{"type":"ziti-sdk-c","version":"1.18.3","revision":"bench","branch":"main","appID":"bench",'
    b'"appVersion":"1.0"},"envInfo":{"os":"linux","osRelease":"6.1","osVersion":"1","arch":"x86_64",'
    b'"hostname":"bench","domain":"","deviceId":"bench-device"}}'
)
JSON_HEADERS = [(b"host", HOST.encode()), (b"content-type", b"application/json"), (b"accept", b"application/json")]
FORM_HEADERS = [(b"host", HOST.encode()), (b"content-type", b"application/x-www-form-urlencoded")]
STEPS = {
    "/oidc/authorize": "authorize",
    "/oidc/login/cert": "login",
    "/oidc/authorize/callback": "code",
    "/oidc/oauth/token": "token",
}


class WsgiCaller:
    """Calls the app as the TLS listener would, without sockets; adds up the app's time per path."""

    def __init__(self, app, peer_certs):
        self.app, self.peer_certs = app, list(peer_certs)
        self.spent: dict[str, float] = defaultdict(float)

    def __call__(self, method: str, target: str, body: bytes = b"", headers=()) -> tuple[int, dict, bytes]:
        head = RequestHead(method, target.encode("latin-1"), "1.1", list(headers) or [(b"host", HOST.encode())])
        environ = build_environ(head, body, server=("127.0.0.1", 1280), peer=("127.0.0.1", 40000), scheme="https")
        environ[PEER_CERTS_KEY] = list(self.peer_certs)
        reply: dict = {}

        def start_response(status, response_headers, exc_info=None):
            reply["status"], reply["headers"] = int(status[:3]), {k.lower(): v for k, v in response_headers}

        started = time.thread_time()
        data = b"".join(self.app(environ, start_response))
        self.spent[environ["PATH_INFO"]] += time.thread_time() - started
        return reply["status"], reply["headers"], data


def _expect(step: str, status: int, wanted: int, data: bytes) -> None:
    if status != wanted:
        raise RuntimeError(f"{step}: {status} {data[:200]!r}")


def legacy_login(call: WsgiCaller) -> None:
    status, _, data = call("POST", "/edge/client/v1/authenticate?method=cert", SDK_BODY, JSON_HEADERS)
    _expect("authenticate", status, 200, data)


def oidc_login(call: WsgiCaller) -> None:
    """The C SDK's cert login: POST authorize (query), POST login (JSON), GET callback, POST token (form)."""
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(40)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(30)
    query = urlencode(
        {
            "client_id": "openziti",
            "scope": "openid offline_access",
            "response_type": "code",
            "redirect_uri": C_REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "audience": "openziti",
        }
    )
    status, headers, data = call("POST", "/oidc/authorize?" + query, b"", JSON_HEADERS[:1] + JSON_HEADERS[2:])
    _expect("authorize", status, 302, data)
    request_id = headers["location"].split("authRequestID=", 1)[1].split("&", 1)[0]
    status, headers, data = call("POST", f"/oidc/login/cert?id={request_id}", SDK_BODY, JSON_HEADERS)
    _expect("login", status, 302, data)
    status, headers, data = call("GET", f"/oidc/authorize/callback?id={request_id}")
    _expect("callback", status, 302, data)
    tail = headers["location"].split("code=", 1)[1]
    form = (
        f"state={state}&code={tail}&grant_type=authorization_code&code_verifier={verifier}"
        f"&client_id=openziti&redirect_uri={C_REDIRECT}"
    )
    status, _, data = call("POST", "/oidc/oauth/token", form.encode(), FORM_HEADERS)
    _expect("token", status, 200, data)


def _enrolled(app) -> ZitiClient:
    with ZitiClient.in_process(app) as admin:
        admin.login("admin", "admin")
        created = admin.management.create_identity(
            body={"name": "bench-oidc", "type": "Device", "isAdmin": False, "enrollment": {"ott": True}}
        )
        token = admin.management.detail_identity(created["id"])["enrollment"]["ott"]["jwt"]
        identity = flows.enroll_ott(admin, token)
    return flows.cert_client(app, identity)


def _best_rate(count: int, rounds: int, work) -> float:
    """Per CPU-second: the best of ``rounds`` runs of ``count``."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(count):
            work()
        best = min(best, time.process_time() - started)
    return count / max(best, 1e-9)


def _app_rate(call: WsgiCaller, count: int, login) -> float:
    """Logins per CPU-second of the app alone: ``count`` logins over the app time they cost."""
    call.spent.clear()
    for _ in range(count):
        login(call)
    return count / max(sum(call.spent.values()), 1e-9)


def _sign_cost(signer, count: int) -> float:
    """Microseconds of a code exchange's signatures: access and ID token (server key), refresh token (HS256 MAC)."""
    data = b"x" * 900  # about a token's signing input
    started = time.thread_time()
    for _ in range(count):
        signer._raw_sign(data)
        signer._raw_sign(data)
        signer._mac(data)
    return (time.thread_time() - started) / count * 1e6


def login_figures(key_type: str, logins: int, rounds: int) -> dict:
    """Legacy and OIDC cert logins against one controller whose server key is ``key_type``."""
    app = create_app(Config(server_key_type=key_type))
    try:
        client = _enrolled(app)
        call = WsgiCaller(app, client.http._transport.app.peer_certs)
        client.close()
        for _ in range(10):  # warm caches and code paths alike
            legacy_login(call)
            oidc_login(call)
        legacy, oidc, per_step = 0.0, 0.0, {}
        for _ in range(rounds):  # alternating, so a load spike hits both; the best round of each
            legacy = max(legacy, _app_rate(call, logins, legacy_login))
            rate = _app_rate(call, logins, oidc_login)
            if rate > oidc:  # the app's time per step in that round
                oidc = rate
                per_step = {STEPS[path]: spent / logins * 1e6 for path, spent in call.spent.items() if path in STEPS}
        signer = app.controller.logins.oidc.signer
        alg = signer.alg
        signatures = _sign_cost(signer, logins)
    finally:
        app.controller.close()
    steps = " / ".join(f"{per_step.get(name, 0):.0f}" for name in STEPS.values())
    return {
        f"[{alg}] legacy cert logins per CPU-s (anchor)": legacy,
        f"[{alg}] OIDC cert logins per CPU-s": oidc,
        f"[{alg}] OIDC / legacy login ratio (target 0.7)": oidc / legacy,
        f"[{alg}] CPU µs per step: authorize/login/code/token": steps,
        f"[{alg}] CPU µs per legacy login | per OIDC login": f"{1e6 / legacy:.0f} | {1e6 / oidc:.0f}",
        f"[{alg}] CPU µs of the token step's 2 signatures + refresh MAC": signatures,
    }


def harness_figures(logins: int, requests: int) -> dict:
    """Through the harness's in-process httpx client: logins (as before) and bearer vs zt-session requests."""
    app = create_app(Config())
    try:
        client = _enrolled(app)
        legacy = _best_rate(logins, 1, lambda: client.edge.call("authenticate", method="cert", body={}))
        oidc = _best_rate(logins, 1, OidcLogin(client.http, "cert", "c").run)
        client.login_cert()
        zt_session = _best_rate(requests, 1, client.edge.get_current_identity)
        client.login_cert(oidc="c")
        bearer = _best_rate(requests, 1, client.edge.get_current_identity)
        client.close()
    finally:
        app.controller.close()
    return {
        "harness client: OIDC / legacy login ratio": oidc / legacy,
        "GET /current-identity per CPU-s, zt-session (anchor)": zt_session,
        "GET /current-identity per CPU-s, bearer token": bearer,
        "bearer / zt-session ratio": bearer / zt_session,
    }


def main(quick: bool = False, logins: int | None = None, requests: int | None = None) -> dict:
    logins = logins or (40 if quick else 200)
    requests = requests or (200 if quick else 1000)
    rounds = 3 if quick else 5
    figures = {}
    for key_type in ("rsa", "ec"):
        figures.update(login_figures(key_type, logins, rounds))
    figures.update(harness_figures(max(20, logins // 5), requests))
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.oidc")
    parser.add_argument("--logins", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for key, value in main(quick=args.quick, logins=args.logins, requests=args.requests).items():
        print(f"{key:<52} {value:,.2f}" if isinstance(value, float) else f"{key:<52} {value}")
