"""Certificate logins and enrollments per second over real, keep-alive TLS on 127.0.0.1.

Run: ``python -m benchmarks.pki [--logins N] [--enrollments N] [--clients N]``.
The controller runs in-process (memory store) behind its TLS listener; the
clients use httpx + ssl with certificates from ``harness.pki`` only. Client-side
work (keys, CSRs) is prepared before the clock starts.
"""
from __future__ import annotations

import argparse
import threading
import time

import httpx
from cryptography import x509

from controller.app import create_app
from controller.config import Config
from controller.tls import TLSServer
from harness import pki as hp
from harness.wire import Api
from harness.enroll import ott_csr, parse_cacerts, pem_bundle
from harness.transport import inprocess


def _ok(response: httpx.Response) -> dict:
    if response.status_code >= 300:
        raise RuntimeError(f"{response.status_code} {response.text[:200]}")
    return response.json()["data"]


def _tokens(admin: Api, count: int, prefix: str) -> list[tuple[str, str]]:
    out = []
    for number in range(count):
        identity_id = admin.create("identities", {"name": f"{prefix}-{number:05d}", "type": "Device", "isAdmin": False,
                                                  "enrollment": {"ott": True}})
        out.append((identity_id, admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ott"]["token"]))
    return out


def _enroll(http: httpx.Client, token: str, csr_pem: str) -> str:
    response = http.post("/edge/client/v1/enroll", params={"method": "ott", "token": token}, content=csr_pem,
                         headers={"content-type": "text/plain"})
    return _ok(response)["cert"]


def measure_enrollments(base: str, ca_pem: str, work: list[tuple[str, str]]) -> float:
    """Enrollments per second on one keep-alive connection."""
    prepared = [(token, ott_csr(identity_id, base)) for identity_id, token in work]
    with httpx.Client(base_url=base, verify=hp.client_ssl_context(ca_pem), timeout=30) as http:
        started = time.perf_counter()
        for token, (csr_pem, _key) in prepared:
            _enroll(http, token, csr_pem)
        elapsed = time.perf_counter() - started
    return len(prepared) / elapsed


def measure_logins(base: str, ca_pem: str, clients: list[hp.CertKey], per_client: int) -> float:
    """Certificate logins per second: one keep-alive TLS connection per client, in parallel."""
    https = [httpx.Client(base_url=base, verify=hp.client_ssl_context(ca_pem, c), timeout=30) for c in clients]
    for http in https:  # handshake and warm-up outside the clock
        _ok(http.post("/authenticate", params={"method": "cert"}, json={}))
    errors: list[BaseException] = []

    def worker(http: httpx.Client) -> None:
        try:
            for _ in range(per_client):
                _ok(http.post("/authenticate", params={"method": "cert"}, json={}))
        except BaseException as ex:  # noqa: BLE001 - reported below
            errors.append(ex)

    threads = [threading.Thread(target=worker, args=(h,)) for h in https]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    for http in https:
        http.close()
    if errors:
        raise errors[0]
    return len(https) * per_client / elapsed


def run(logins: int = 300, enrollments: int = 100, clients: int = 1) -> dict:
    app = create_app(Config(fsync=False))
    server = TLSServer(app, "127.0.0.1", 0, app.controller.pki, threads=8).start()
    base = f"https://127.0.0.1:{server.port}"
    try:
        with httpx.Client(verify=False, timeout=10) as first:  # the SDK's first, unverified look
            ca_pem = pem_bundle(parse_cacerts(first.get(base + "/.well-known/est/cacerts").text))
        with inprocess(app) as local:
            admin = Api(local).login("admin", "admin")
            enroll_work = _tokens(admin, enrollments, "bench-enroll")
            login_work = _tokens(admin, clients, "bench-login")
        enroll_rate = measure_enrollments(base, ca_pem, enroll_work)
        certs = []
        with httpx.Client(base_url=base, verify=hp.client_ssl_context(ca_pem), timeout=30) as http:
            for identity_id, token in login_work:
                csr_pem, key = ott_csr(identity_id, base)
                chain = x509.load_pem_x509_certificates(_enroll(http, token, csr_pem).encode())
                certs.append(hp.CertKey(chain[0], key, chain[1:]))
        login_rate = measure_logins(base, ca_pem, certs, max(1, logins // clients))
    finally:
        server.stop()
        app.controller.close()
    return {"cert_logins_per_second": login_rate, "enrollments_per_second": enroll_rate, "clients": clients}


def main(quick: bool = False) -> dict:
    """Figures for ``python -m benchmarks`` (printed there, never asserted)."""
    result = run(100, 30, 1) if quick else run(300, 100, 1)
    parallel = run(200 if quick else 400, 1, 4)
    return {"cert logins/s, 1 keep-alive TLS connection": result["cert_logins_per_second"],
            "cert logins/s, 4 keep-alive TLS connections": parallel["cert_logins_per_second"],
            "ott enrollments/s (CSR signed, 1 connection)": result["enrollments_per_second"]}


def _cli(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.pki", description=__doc__.splitlines()[0])
    parser.add_argument("--logins", type=int, default=300)
    parser.add_argument("--enrollments", type=int, default=100)
    parser.add_argument("--clients", type=int, default=1, help="parallel keep-alive TLS connections for logins")
    args = parser.parse_args(argv)
    result = run(args.logins, args.enrollments, args.clients)
    print(f"pki: {result['cert_logins_per_second']:.0f} certificate logins/s over keep-alive TLS "
          f"({result['clients']} connection(s)); {result['enrollments_per_second']:.0f} ott enrollments/s")


if __name__ == "__main__":
    _cli()
