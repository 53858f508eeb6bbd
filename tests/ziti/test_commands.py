"""Each ``ziti edge`` command as a subprocess: output shapes (table headers, paging line, ``-j`` JSON),
what it creates, and its errors (one ``error:`` line, exit code).

The table headers are the real command's (``ziti/cmd/edge/list.go``, go-pretty upper-cases them);
``create`` prints ``New <kind> <name> created with id: <id>`` (auth policies and ext-jwt signers
print the id alone), as ``api.Options.LogCreateResult`` does.
"""

from __future__ import annotations

import hashlib
import json
import stat
import subprocess
import sys
import time

import httpx
import jwt as pyjwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from harness.client import pki as hp
from tests.ziti.conftest import ROOT, Ziti, env_for, free_port


def header_cells(table: str) -> list[str]:
    return [cell.strip() for cell in table.splitlines()[1].strip("│").split("│")]


def row_cells(table: str) -> list[list[str]]:
    lines = table.splitlines()
    return [[c.strip() for c in line.strip("│").split("│")] for line in lines[3:] if line.startswith("│")]


def one_error(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


HEADERS = {
    "identities": ["ID", "NAME", "TYPE", "ATTRIBUTES", "AUTH-POLICY"],
    "services": ["ID", "NAME", "ENCRYPTION REQUIRED", "TERMINATOR STRATEGY", "ATTRIBUTES"],
    "configs": ["ID", "NAME", "CONFIG TYPE"],
    "config-types": ["ID", "NAME", "SCHEMA"],
    "service-policies": ["ID", "NAME", "SEMANTIC", "SERVICE ROLES", "IDENTITY ROLES", "POSTURE CHECK ROLES"],
    "edge-router-policies": ["ID", "NAME", "EDGE ROUTER ROLES", "IDENTITY ROLES"],
    "service-edge-router-policies": ["ID", "NAME", "SERVICE ROLES", "EDGE ROUTER ROLES"],
    "edge-routers": ["ID", "NAME", "ONLINE", "ALLOW TRANSIT", "COST", "ATTRIBUTES"],
    "terminators": ["ID", "SERVICE", "ROUTER", "BINDING", "ADDRESS", "IDENTITY", "COST", "PRECEDENCE", "DYNAMIC COST"],
}


@pytest.mark.parametrize("kind", sorted(HEADERS))
def test_list_prints_the_real_table_header_and_a_paging_line(ziti, quickstart, kind):
    out = ziti.edge("list", kind)
    table, paging = out.rstrip("\n").rsplit("\n", 1)
    assert table.splitlines()[0].startswith("╭") and table.splitlines()[-1].startswith("╰")
    assert header_cells(table) == HEADERS[kind]
    assert paging == "results: none" or paging.startswith("results: 1-")


def test_create_identity_writes_the_jwt_and_lists_with_filter_table_and_json(ziti, quickstart, tmp_path):
    out = ziti.edge("create", "identity", "cmd-alice", "-a", "client,blue", "-o", tmp_path / "alice.jwt")
    created, expires = out.splitlines()
    assert created.startswith("New identity cmd-alice created with id: ")
    identity_id = created.rsplit(" ", 1)[1]
    assert expires.startswith("Enrollment expires at 20")
    jwt_file = tmp_path / "alice.jwt"
    assert stat.S_IMODE(jwt_file.stat().st_mode) == 0o600
    claims = pyjwt.decode(jwt_file.read_text(), options={"verify_signature": False})
    assert claims["em"] == "ott" and claims["sub"] == identity_id
    assert claims["iss"] == f"https://127.0.0.1:{quickstart.ctrl_port}"

    table = ziti.edge("list", "identities", 'name = "cmd-alice"')
    assert row_cells(table.rsplit("\n", 2)[0]) == [
        [identity_id, "cmd-alice", "Default", "blue,client", "Default"]
    ] or row_cells(table.rsplit("\n", 2)[0]) == [[identity_id, "cmd-alice", "Default", "client,blue", "Default"]]
    assert table.rstrip().endswith("results: 1-1 of 1")
    payload = json.loads(ziti.edge("list", "identities", 'name = "cmd-alice"', "-j"))
    assert [i["id"] for i in payload["data"]] == [identity_id]
    assert payload["meta"]["pagination"]["totalCount"] == 1


def test_create_with_json_output_prints_the_controllers_answer(ziti, quickstart):
    answer = json.loads(ziti.edge("create", "service", "cmd-json-svc", "-j"))
    listed = json.loads(ziti.edge("list", "services", 'name = "cmd-json-svc"', "-j"))["data"][0]
    assert answer["data"]["id"] == listed["id"]
    assert listed["encryptionRequired"] is True  # the real CLI's default --encryption ON


def test_service_config_policies_by_name_and_updates(ziti, quickstart):
    ziti.edge("create", "identity", "cmd-dialer", "-a", "dialers")
    ziti.edge(
        "create",
        "config",
        "cmd-cfg",
        "intercept.v1",
        '{"protocols":["tcp"],"addresses":["x.ziti"],"portRanges":[{"low":1,"high":2}]}',
    )
    assert ziti.edge("create", "service", "cmd-svc", "-c", "cmd-cfg", "-a", "web", "--encryption", "OFF").startswith(
        "New service cmd-svc created with id: "
    )
    out = ziti.edge(
        "create",
        "service-policy",
        "cmd-dial",
        "Dial",
        "--identity-roles",
        "@cmd-dialer,#dialers",
        "--service-roles",
        "@cmd-svc",
        "--semantic",
        "AnyOf",
    )
    assert out.startswith("New service policy cmd-dial created with id: ")
    policy = json.loads(ziti.edge("list", "service-policies", 'name = "cmd-dial"', "-j"))["data"][0]
    dialer = json.loads(ziti.edge("list", "identities", 'name = "cmd-dialer"', "-j"))["data"][0]
    service = json.loads(ziti.edge("list", "services", 'name = "cmd-svc"', "-j"))["data"][0]
    assert sorted(policy["identityRoles"]) == sorted([f"@{dialer['id']}", "#dialers"]) and policy["serviceRoles"] == [
        f"@{service['id']}"
    ]
    assert policy["semantic"] == "AnyOf" and service["encryptionRequired"] is False

    ziti.edge("update", "service", "cmd-svc", "-a", "web,api")
    ziti.edge("update", "identity", "cmd-dialer", "-n", "cmd-dialer2", "-a", "x")
    service = json.loads(ziti.edge("list", "services", 'name = "cmd-svc"', "-j"))["data"][0]
    assert sorted(service["roleAttributes"]) == ["api", "web"]
    renamed = json.loads(ziti.edge("list", "identities", f'id = "{dialer["id"]}"', "-j"))["data"][0]
    assert renamed["name"] == "cmd-dialer2" and renamed["roleAttributes"] == ["x"]


def test_edge_router_with_jwt_tunneler_and_attributes(ziti, quickstart, tmp_path):
    out = ziti.edge("create", "edge-router", "cmd-er", "-o", tmp_path / "er.jwt", "-t", "-a", "public,east")
    assert out.startswith("New edge router cmd-er created with id: ")
    claims = pyjwt.decode((tmp_path / "er.jwt").read_text(), options={"verify_signature": False})
    assert claims["em"] == "erott"
    router = json.loads(ziti.edge("list", "edge-routers", 'name = "cmd-er"', "-j"))["data"][0]
    assert router["isTunnelerEnabled"] is True and sorted(router["roleAttributes"]) == ["east", "public"]
    ziti.edge("update", "edge-router", "cmd-er", "--tunneler-enabled=false")
    router = json.loads(ziti.edge("list", "edge-routers", 'name = "cmd-er"', "-j"))["data"][0]
    assert router["isTunnelerEnabled"] is False


def test_delete_by_name_and_where(ziti, quickstart):
    for name in ("zz-del-1", "zz-del-2", "zz-del-3"):
        ziti.edge("create", "identity", name)
    first = json.loads(ziti.edge("list", "identities", 'name = "zz-del-1"', "-j"))["data"][0]["id"]
    assert ziti.edge("delete", "identity", "zz-del-1") == f"delete of identity with id {first}: OK\n"
    out = ziti.edge("delete", "identities", "where", 'name contains "zz-del-"').splitlines()
    assert out[0] == "filter returned results: 1-2 of 2" and len(out) == 3
    assert all(line.startswith("delete of identity with id ") and line.endswith(": OK") for line in out[1:])
    assert ziti.edge("list", "identities", 'name contains "zz-del-"').rstrip().endswith("results: none")


def test_posture_check_and_ca(ziti, quickstart, tmp_path):
    out = ziti.edge("create", "posture-check", "mac", "cmd-mac", "-m", "aa:bb:cc:dd:ee:ff", "-a", "laptops")
    check = json.loads(ziti.edge("list", "posture-checks", 'name = "cmd-mac"', "-j"))["data"][0]
    assert out.strip() == check["id"]  # the real mac subcommand prints the id alone, the address cleaned to hex
    assert check["typeId"] == "MAC" and check["macAddresses"] == ["aabbccddeeff"]

    ca = hp.make_root_ca("cmd-third-party-ca")
    (tmp_path / "ca.pem").write_text(ca.cert_pem)
    out = ziti.edge("create", "ca", "cmd-ca", tmp_path / "ca.pem", "-a", "-e", "-r", "from-ca")
    assert out.startswith("New CA cmd-ca created with id: ")
    table = ziti.edge("list", "cas", 'name = "cmd-ca"')
    assert header_cells(table) == ["ID", "NAME", "FLAGS", "TOKEN", "FINGERPRINT"]
    assert row_cells(table.rsplit("\n", 2)[0])[0][2] == "[AE]"  # not verified yet: auto-CA and auth flags


def test_policy_advisor_reports_usable_pairs(ziti, quickstart):
    ziti.edge("create", "identity", "adv-id", "-a", "adv")
    ziti.edge("create", "service", "adv-svc")
    ziti.edge("create", "sp", "adv-dial", "Dial", "--identity-roles", "#adv", "--service-roles", "@adv-svc")
    out = ziti.edge("policy-advisor", "identities", "adv-id")
    assert out.startswith("OKAY : adv-id (") and "-> adv-svc (" in out and out.strip().endswith("Dial: Y Bind: N")
    assert ziti("edge", "policy-advisor", "identities", "nobody-here").returncode == 1


def test_enroll_command_writes_an_identity_file(ziti, quickstart, tmp_path):
    ziti.edge("create", "identity", "cmd-enrollee", "-o", tmp_path / "e.jwt")
    out = ziti.edge("enroll", tmp_path / "e.jwt", "-o", tmp_path / "e.json")
    assert out.strip() == f"enrolled successfully. identity file written to: {tmp_path / 'e.json'}"
    identity = json.loads((tmp_path / "e.json").read_text())
    assert identity["ztAPI"] == f"https://127.0.0.1:{quickstart.ctrl_port}"
    assert identity["id"]["cert"].startswith("pem:-----BEGIN CERTIFICATE")
    assert stat.S_IMODE((tmp_path / "e.json").stat().st_mode) == 0o600
    detail = json.loads(ziti.edge("list", "identities", 'name = "cmd-enrollee"', "-j"))["data"][0]
    assert not (detail.get("enrollment") or {}).get("ott")
    again = ziti("edge", "enroll", tmp_path / "e.jwt", "-o", tmp_path / "again.json")
    assert again.returncode == 1 and "INVALID_ENROLLMENT_TOKEN" in one_error(again)


# -- errors ------------------------------------------------------------------------


def test_errors_are_one_line_with_the_documented_exit_code(ziti, quickstart, tmp_path):
    done = ziti("edge", "create", "service-policy", "p", "Both", "--service-roles", "#all")
    assert done.returncode == 2 and one_error(done) == "error: Invalid policy type 'Both'. Valid values: [Bind, Dial]"
    done = ziti("edge", "update", "identity", "nobody-at-all", "-a", "x")
    assert done.returncode == 1 and one_error(done) == "error: no identities found with id or name nobody-at-all"
    ziti.edge("create", "service", "cmd-dup")
    done = ziti("edge", "create", "service", "cmd-dup")
    assert done.returncode == 1 and "duplicate value 'cmd-dup'" in one_error(done)
    done = ziti("edge", "create", "config", "bad", "intercept.v1", "{not json")
    assert done.returncode == 2 and one_error(done).startswith("error: the config data is not valid JSON")
    done = ziti("edge", "list", "identities", "name = ")
    assert done.returncode == 1 and "INVALID_FILTER" in one_error(done)
    done = ziti("edge", "create", "identity", "x", "--no-such-flag")
    assert done.returncode == 2 and "--no-such-flag" in one_error(done)
    done = ziti("edge", "create", "identity", "two", "names")
    assert done.returncode == 2 and "takes one name" in one_error(done)
    done = ziti("edge", "update", "service", "cmd-dup")
    assert done.returncode == 2 and "no values changed" in one_error(done)


def test_without_a_login_commands_say_how_to_log_in(tmp_path):
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness.ziti", "edge", "list", "identities"],
        cwd=ROOT,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    timings = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    done.stderr = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
    assert done.returncode == 3
    assert one_error(done).startswith(
        f"error: no identity 'default' found in cli config {tmp_path}/.config/ziti/ziti-cli.json"
    )
    # httpx imports its own command line (click, rich, pygments: 15 ms of the ~130 ms each command costs)
    # wherever those are installed; no command here runs it, so it is left out (a left-out module is only tried)
    imported = {line.rsplit("|", 1)[1].strip() for line in timings}
    assert "httpx" in imported and not imported & {"click", "rich", "pygments", "rich.console", "pygments.lexers"}


def test_login_saves_the_real_config_file_then_logout_forgets_it(quickstart, tmp_path):
    user = Ziti(tmp_path)
    url = f"127.0.0.1:{quickstart.ctrl_port}"
    untrusted = user("edge", "login", url, "-u", "admin", "-p", "admin")
    assert untrusted.returncode == 3 and "-y" in one_error(untrusted)
    wrong = user("edge", "login", url, "-u", "admin", "-p", "wrong", "-y")
    assert wrong.returncode == 3 and "refused the login of 'admin'" in one_error(wrong)

    out = user.edge("login", url, "-u", "admin", "-p", "admin", "-y")
    config_file = tmp_path / ".config" / "ziti" / "ziti-cli.json"
    assert out.strip().endswith(f"Saving identity 'default' to {config_file}")
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(config_file.parent.stat().st_mode) == 0o700
    saved = json.loads(config_file.read_text())
    login = saved["edgeIdentities"]["default"]
    assert saved["default"] == "default"
    assert login["url"] == f"https://{url}/edge/management/v1" and login["username"] == "admin"
    assert login["token"] and login["token"] not in out
    assert (tmp_path / ".config" / "ziti" / "certificates" / "127.0.0.1").read_text() == open(login["caCert"]).read()
    assert "quickstart-router" in user.edge("list", "edge-routers")

    assert "Removing identity 'default'" in user.edge("logout")
    assert "default" not in json.loads(config_file.read_text())["edgeIdentities"]
    assert user("edge", "list", "services").returncode == 3


def test_nothing_listening_is_exit_code_3(tmp_path):
    from tests.ziti.conftest import free_port

    done = Ziti(tmp_path)("edge", "login", f"127.0.0.1:{free_port()}", "-u", "admin", "-p", "admin", "-y")
    assert done.returncode == 3 and "nothing is listening" in one_error(done)


# -- the C SDK's set-up: auth policies, ext-jwt signers, and what they enable ----------


def signer_cert(tmp_path):
    """What the C SDK's ``jwt_signers`` fixture makes with openssl: an RSA key, a self-signed cert, its kid."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "test-jwt-signer"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "OpenZiti Test"),
        ]
    )
    now = time.time()
    import datetime

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime.fromtimestamp(now - 60, datetime.timezone.utc))
        .not_valid_after(datetime.datetime.fromtimestamp(now + 86400 * 365, datetime.timezone.utc))
        .sign(key, hashes.SHA256())
    )
    path = tmp_path / "test-jwt-signer.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    kid = hashlib.sha1(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    return key, path, kid


def external_jwt(key, kid: str, issuer: str, subject: str) -> str:
    now = int(time.time())
    claims = {"iss": issuer, "sub": subject, "aud": "openziti", "iat": now, "exp": now + 600}
    return pyjwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def enroll_token(quickstart, token: str, csr_pem: str | None = None) -> httpx.Response:
    return httpx.post(
        f"https://127.0.0.1:{quickstart.ctrl_port}/edge/client/v1/enroll/token",
        headers={"Authorization": f"Bearer {token}"},
        json={"clientCsr": csr_pem} if csr_pem else {},
        verify=False,
        timeout=10,
    )


def test_c_sdk_set_up_then_enroll_to_cert_and_to_token_with_an_external_jwt(ziti, quickstart, tmp_path):
    # base_model, ziti_model
    ziti.edge(
        "create", "service-policy", "servers-bind", "Bind", "--identity-roles", "#server", "--service-roles", "#all"
    )
    ziti.edge(
        "create", "service-policy", "clients-dial", "Dial", "--identity-roles", "#client", "--service-roles", "#all"
    )
    ziti.edge("create", "service", "test-service")
    ziti.edge("create", "identity", "test-client", "-a", "client", "-o", tmp_path / "test_client.jwt")
    # jwt_signers
    key, cert_file, kid = signer_cert(tmp_path)
    cert_signer = ziti.edge(
        "create",
        "ext-jwt-signer",
        "test-ext-jwt-signer",
        "https://test-jwt-issuer.example.com",
        "--cert-file",
        cert_file,
        "--audience",
        "openziti",
        "--enroll-to-cert",
        "--kid",
        kid,
    ).strip()
    token_signer = ziti.edge(
        "create",
        "ext-jwt-signer",
        "test-ext-jwt-signer-token",
        "https://test-jwt-issuer-token.example.com",
        "--cert-file",
        cert_file,
        "--audience",
        "openziti",
        "--enroll-to-token",
        "--kid",
        kid,
    ).strip()
    ziti.edge("create", "identity", "test-precreated", "-a", "client")
    signers = {s["name"]: s for s in json.loads(ziti.edge("list", "ext-jwt-signers", "-j"))["data"]}
    assert (
        signers["test-ext-jwt-signer"]["id"] == cert_signer
        and signers["test-ext-jwt-signer-token"]["id"] == token_signer
    )
    assert signers["test-ext-jwt-signer"]["enrollToCertEnabled"] is True
    assert signers["test-ext-jwt-signer"]["enrollToTokenEnabled"] is False
    assert signers["test-ext-jwt-signer-token"]["enrollToTokenEnabled"] is True
    assert signers["test-ext-jwt-signer"]["kid"] == kid and signers["test-ext-jwt-signer"]["useExternalId"] is True

    # enroll to a certificate: the controller signs the CSR that comes with the first token
    csr, _ = hp.make_csr("enrollToCert", o="OpenZiti")
    token = external_jwt(key, kid, "https://test-jwt-issuer.example.com", "cert-user@example.com")
    response = enroll_token(quickstart, token, hp.csr_pem(csr))
    assert response.status_code == 200, response.text
    assert "BEGIN CERTIFICATE" in response.json()["data"]["cert"]
    assert "cert-user@example.com" in ziti.edge("list", "identities", 'externalId = "cert-user@example.com"')

    # enroll to a token: the identity is created with no certificate
    token = external_jwt(key, kid, "https://test-jwt-issuer-token.example.com", "token-user@example.com")
    assert enroll_token(quickstart, token).status_code == 200
    assert "token-user@example.com" in ziti.edge("list", "identities", 'externalId = "token-user@example.com"')

    # the C SDK's enroll_mode: flags flipped with update, "=false" turning one off
    ziti.edge(
        "update", "ext-jwt-signer", "test-ext-jwt-signer-token", "--enroll-to-cert=true", "--enroll-to-token=false"
    )
    updated = json.loads(ziti.edge("list", "ext-jwt-signers", 'name = "test-ext-jwt-signer-token"', "-j"))["data"][0]
    assert updated["enrollToCertEnabled"] is True and updated["enrollToTokenEnabled"] is False
    refused = enroll_token(
        quickstart, external_jwt(key, kid, "https://test-jwt-issuer-token.example.com", "late@example.com")
    )
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "INVALID_ENROLLMENT_NOT_ALLOWED"


def test_c_sdk_totp_auth_policy_then_update_identity(ziti, quickstart):
    policy_id = ziti.edge(
        "create", "auth-policy", "cert-totp", "--primary-cert-allowed", "--secondary-req-totp"
    ).strip()
    ziti.edge("create", "identity", "totp-client", "-a", "client")
    ziti.edge("update", "identity", "totp-client", "--auth-policy", "cert-totp")
    policy = json.loads(ziti.edge("list", "auth-policies", 'name = "cert-totp"', "-j"))["data"][0]
    assert policy["id"] == policy_id
    assert policy["primary"]["cert"]["allowed"] is True and policy["primary"]["updb"]["allowed"] is False
    assert policy["secondary"]["requireTotp"] is True
    identity = json.loads(ziti.edge("list", "identities", 'name = "totp-client"', "-j"))["data"][0]
    assert identity["authPolicyId"] == policy_id
    assert "cert-totp" in ziti.edge("list", "identities", 'name = "totp-client"')


def test_create_identity_with_external_id_and_auth_policy_by_name(ziti, quickstart):
    ziti.edge("create", "auth-policy", "ext-only", "--primary-ext-jwt-allowed")
    ziti.edge("create", "identity", "ext-user", "--external-id", "ext-user@example.com", "-P", "ext-only", "-A")
    identity = json.loads(ziti.edge("list", "identities", 'externalId = "ext-user@example.com"', "-j"))["data"][0]
    policy = json.loads(ziti.edge("list", "auth-policies", 'name = "ext-only"', "-j"))["data"][0]
    assert identity["name"] == "ext-user" and identity["authPolicyId"] == policy["id"] and identity["isAdmin"] is True
    done = ziti("edge", "create", "identity", "x-missing-policy", "-P", "no-such-policy")
    assert done.returncode == 1 and one_error(done) == "error: no auth-policies found with id or name no-such-policy"


def test_updb_identity_enrolls_with_a_password_then_logs_in(ziti, quickstart, tmp_path):
    out = ziti.edge("create", "identity", "cmd-updb", "--updb", "cmd-user", "-o", tmp_path / "u.jwt")
    assert out.strip().startswith("New identity cmd-updb created with id: ") and "Enrollment expires" not in out
    assert pyjwt.decode((tmp_path / "u.jwt").read_text(), options={"verify_signature": False})["em"] == "updb"
    ziti.edge("enroll", tmp_path / "u.jwt", "--password", "Cmd-pass-123")
    user = Ziti(tmp_path / "user-home")
    user.edge("login", f"127.0.0.1:{quickstart.ctrl_port}", "-u", "cmd-user", "-p", "Cmd-pass-123", "-y")
    denied = user("edge", "list", "identities")  # not an admin: the management API refuses the session
    assert denied.returncode == 3 and "UNAUTHORIZED" in one_error(denied)


def test_a_router_of_its_own_enrolls_from_the_quickstart_and_comes_online(ziti, quickstart, tmp_path):
    """`ziti edge create edge-router -o`, then `ziti-router enroll` and `run`: the quickstart's control channel."""
    ziti.edge("create", "edge-router", "own-er", "-o", tmp_path / "own.jwt", "-a", "public")
    claims = pyjwt.decode((tmp_path / "own.jwt").read_text(), options={"verify_signature": False})
    assert claims["ctrls"] == [next(x.split()[-1] for x in quickstart.lines if "control channel at" in x)]
    data, port = tmp_path / "own-data", free_port()
    router = [sys.executable, "-m", "router"]
    enrolled = subprocess.run(
        [*router, "enroll", str(tmp_path / "own.jwt"), "--data", str(data), "--advertise", f"127.0.0.1:{port}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert enrolled.returncode == 0, enrolled.stderr
    ready = tmp_path / "own.ready"
    proc = subprocess.Popen(
        [*router, "run", "--data", str(data), "--ready-file", str(ready)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the router did not get ready"
            time.sleep(0.05)
        listed = json.loads(ziti.edge("list", "edge-routers", 'name = "own-er"', "-j"))["data"][0]
        assert listed["isOnline"] is True and listed["supportedProtocols"]["tls"] == f"tls://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)
