"""``ziti edge login`` by every means the real command offers, each as a subprocess against a quickstart:
``--token`` (legacy and OIDC; saved read-only unless ``--read-only=false``), ``--client-cert``/``--client-key``,
``--file`` (an enrolled identity file, its controller and CA taken from it), ``--ext-jwt``, ``--ignore-config``,
and the read-only refusal of later changes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from harness.client import ZitiClient
from tests.ziti.conftest import Ziti
from tests.ziti.test_commands import external_jwt, one_error, signer_cert

NOTE = "NOTE: When using --token the saved identity will be marked as read-only unless --read-only=false is provided"
READ_ONLY = "error: this login is marked read-only, only GET operations are allowed"


def saved(home: Path) -> dict:
    return json.loads((home / ".config" / "ziti" / "ziti-cli.json").read_text())["edgeIdentities"]["default"]


def admin_token(ziti) -> str:
    return saved(ziti.home)["token"]


def test_token_login_is_read_only_unless_read_only_false(ziti, quickstart, tmp_path):
    url = f"127.0.0.1:{quickstart.ctrl_port}"
    user = Ziti(tmp_path)
    out = user.edge("login", url, "--token", admin_token(ziti), "-y").splitlines()
    assert out[0] == NOTE and out[-1] == f"Saving identity 'default' to {tmp_path}/.config/ziti/ziti-cli.json"
    login = saved(tmp_path)
    assert login["readOnly"] is True and login["username"] == "" and login["token"] == admin_token(ziti)
    assert "quickstart-router" in user.edge("list", "edge-routers")
    for change in (
        ("create", "service", "ro-svc"),
        ("update", "identity", "admin", "-a", "x"),
        ("delete", "identity", "admin"),
    ):
        done = user("edge", *change)
        assert done.returncode == 1 and one_error(done) == READ_ONLY, change
    assert "ro-svc" not in ziti.edge("list", "services")

    out = user.edge("login", url, "--token", admin_token(ziti), "--read-only=false", "-y")
    assert NOTE not in out and saved(tmp_path)["readOnly"] is False
    assert user.edge("create", "service", "rw-svc").startswith("New service rw-svc created with id: ")

    user.edge("login", url, "-u", "admin", "-p", "admin", "--read-only", "-y")
    done = user("edge", "create", "service", "ro-svc-2")
    assert done.returncode == 1 and one_error(done) == READ_ONLY


def test_a_token_the_controller_does_not_know_is_refused(quickstart, tmp_path):
    done = Ziti(tmp_path)("edge", "login", f"127.0.0.1:{quickstart.ctrl_port}", "-t", "not-a-session", "-y")
    assert done.returncode == 3 and one_error(done).endswith("get a new token")
    assert (
        not (tmp_path / ".config" / "ziti" / "ziti-cli.json").exists()
        or "default" not in json.loads((tmp_path / ".config" / "ziti" / "ziti-cli.json").read_text())["edgeIdentities"]
    )


def test_an_oidc_access_token_is_sent_as_a_bearer_token(quickstart, tmp_path):
    base = f"https://127.0.0.1:{quickstart.ctrl_port}"
    user = Ziti(tmp_path)
    user.edge("login", base, "-u", "admin", "-p", "admin", "-y")  # caches the controller's CA
    with ZitiClient.connect(base, ca=saved(tmp_path)["caCert"]) as client:
        client.login_oidc("password", username="admin", password="admin")
        access = client.oidc.access_token
    assert access.count(".") == 2
    user.edge("login", base, "--token", access, "--read-only=false")
    assert saved(tmp_path)["token"] == access
    assert "quickstart-router" in user.edge("list", "edge-routers")
    assert user.edge("create", "config-type", "oidc-made").startswith("New config type oidc-made created")


def enrolled_admin(ziti, tmp_path, name: str) -> Path:
    ziti.edge("create", "identity", name, "-A", "-o", tmp_path / f"{name}.jwt")
    ziti.edge("enroll", tmp_path / f"{name}.jwt", "-o", tmp_path / f"{name}.json")
    return tmp_path / f"{name}.json"


def test_client_certificate_and_identity_file_logins(ziti, quickstart, tmp_path):
    identity = json.loads(enrolled_admin(ziti, tmp_path, "cert-admin").read_text())
    assert ziti.ok("ops", "unwrap", tmp_path / "cert-admin.json", "--ca", tmp_path / "ca.pem") == ""
    (tmp_path / "cert-admin.cert").rename(tmp_path / "cert.pem")
    (tmp_path / "cert-admin.key").rename(tmp_path / "key.pem")
    for part in ("cert", "key", "ca"):
        assert (tmp_path / f"{part}.pem").read_text() == identity["id"][part].removeprefix("pem:")
        assert stat.S_IMODE((tmp_path / f"{part}.pem").stat().st_mode) == 0o600
    bad = ziti("ops", "unwrap", tmp_path / "cert-admin.jwt")
    assert bad.returncode == 2 and "is not an identity file" in one_error(bad)
    url = f"127.0.0.1:{quickstart.ctrl_port}"

    user = Ziti(tmp_path / "by-cert")
    out = user.edge("login", url, "-c", tmp_path / "cert.pem", "-k", tmp_path / "key.pem", "--ca", tmp_path / "ca.pem")
    assert out.strip() == f"Saving identity 'default' to {tmp_path}/by-cert/.config/ziti/ziti-cli.json"
    assert saved(tmp_path / "by-cert")["caCert"] == str(tmp_path / "ca.pem")
    assert "quickstart-router" in user.edge("list", "edge-routers")
    current = json.loads(user.edge("list", "identities", 'name = "cert-admin"', "-j"))["data"][0]
    assert current["isAdmin"] is True

    by_file = Ziti(tmp_path / "by-file")
    by_file.edge("login", "-f", tmp_path / "cert-admin.json")  # no URL: the identity file's ztAPI and CA
    login = saved(tmp_path / "by-file")
    assert login["url"] == f"https://{url}/edge/management/v1"
    assert Path(login["caCert"]).read_text() == identity["id"]["ca"].removeprefix("pem:")
    assert by_file.edge("create", "service", "made-by-file").startswith("New service made-by-file created")

    half = user("edge", "login", url, "-c", tmp_path / "cert.pem", "--ca", tmp_path / "ca.pem")
    assert half.returncode == 2 and "--client-key" in one_error(half)
    swapped = user(
        "edge", "login", url, "-c", tmp_path / "key.pem", "-k", tmp_path / "cert.pem", "--ca", tmp_path / "ca.pem"
    )
    assert swapped.returncode == 2 and "could not load" in one_error(swapped)
    missing = user(
        "edge", "login", url, "-c", tmp_path / "nope.pem", "-k", tmp_path / "key.pem", "--ca", tmp_path / "ca.pem"
    )
    assert missing.returncode == 2 and one_error(missing) == f"error: no such file: {tmp_path / 'nope.pem'}"
    stranger = Ziti(tmp_path / "stranger")
    ziti.edge("create", "identity", "cert-gone", "-A", "-o", tmp_path / "gone.jwt")
    ziti.edge("enroll", tmp_path / "gone.jwt", "-o", tmp_path / "gone.json")
    ziti.edge("delete", "identity", "cert-gone")
    refused = stranger("edge", "login", "-f", tmp_path / "gone.json")
    assert refused.returncode == 3 and "refused the certificate login" in one_error(refused)


def test_external_jwt_login_and_ignore_config(ziti, quickstart, tmp_path):
    key, cert_file, kid = signer_cert(tmp_path)
    issuer = "https://login-issuer.example.com"
    ziti.edge(
        "create", "ext-jwt-signer", "login-signer", issuer, "--cert-file", cert_file, "-a", "openziti", "--kid", kid
    )
    ziti.edge("create", "identity", "ext-admin", "-A", "--external-id", "ext-admin-sub")
    (tmp_path / "ext.jwt").write_text(external_jwt(key, kid, issuer, "ext-admin-sub"))
    url = f"127.0.0.1:{quickstart.ctrl_port}"
    user = Ziti(tmp_path / "ext")
    user.edge("login", url, "-e", tmp_path / "ext.jwt", "-y")
    assert "quickstart-router" in user.edge("list", "edge-routers")

    (tmp_path / "stranger.jwt").write_text(external_jwt(key, kid, issuer, "nobody-has-this-id"))
    refused = Ziti(tmp_path / "x")("edge", "login", url, "-e", tmp_path / "stranger.jwt", "-y")
    assert refused.returncode == 3 and "refused the external JWT" in one_error(refused)

    quiet = Ziti(tmp_path / "quiet")
    out = quiet.edge("login", url, "-u", "admin", "-p", "admin", "-y", "--ignore-config")
    assert "Saving identity" not in out
    assert not (tmp_path / "quiet" / ".config" / "ziti" / "ziti-cli.json").exists()


def test_ops_cluster_recover_answers_as_for_a_controller_without_ha(tmp_path):
    config = tmp_path / "ctrl.yaml"
    config.write_text("v: 3\n")
    done = Ziti(tmp_path)("ops", "cluster", "recover", config, "--yes")
    assert done.returncode == 1
    assert one_error(done) == (
        f"error: controller config \"{config}\" has no 'cluster' section; this controller is not configured for HA"
    )
    missing = Ziti(tmp_path)("ops", "cluster", "recover", tmp_path / "none.yaml")
    assert missing.returncode == 1 and "failed to load controller config" in one_error(missing)
    usage = Ziti(tmp_path)("ops", "cluster", "recover")
    assert usage.returncode == 2
