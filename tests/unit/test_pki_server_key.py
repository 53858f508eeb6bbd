"""The TLS server key type: RSA by default (as the real quickstart), EC on request, existing keys kept."""

from __future__ import annotations

import subprocess
import sys

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from controller.app import create_app
from controller.clock import FrozenClock
from controller.config import Config
from controller.pki import ControllerPKI
from harness.client import ZitiClient
from harness.client.transport import inprocess


@pytest.fixture()
def clock():
    return FrozenClock("2025-03-01T00:00:00Z")


def _enrollment_jwt_and_jwks(config: Config):
    app = create_app(config, clock=FrozenClock("2025-03-01T00:00:00Z"))
    try:
        with inprocess(app) as http:
            admin = ZitiClient(http).signed_in("admin", "admin")
            identity_id = admin.create(
                "identities", {"name": "keyed", "type": "Device", "isAdmin": False, "enrollment": {"ott": True}}
            )
            token = admin.mgmt_ok("GET", f"/identities/{identity_id}")["enrollment"]["ott"]["jwt"]
            jwks = http.get("/edge/client/v1/enroll/jwks").json()
        return token, jwks
    finally:
        app.controller.close()


@pytest.mark.parametrize("key_type, alg", [(None, "RS256"), ("rsa", "RS256"), ("ec", "ES256")])
def test_enrollment_jwts_are_signed_with_the_chosen_server_key(tmp_path, key_type, alg):
    token, jwks = _enrollment_jwt_and_jwks(Config(data_dir=tmp_path, fsync=False, server_key_type=key_type))
    header = jwt.get_unverified_header(token)
    assert header["alg"] == alg
    (jwk,) = [k for k in jwks["keys"] if k["kid"] == header["kid"]]
    public = jwt.PyJWK(jwk).key
    claims = jwt.decode(token, public, algorithms=[alg], audience="", options={"verify_exp": False})
    assert claims["em"] == "ott"


def test_memory_mode_follows_the_key_type_too():
    token, _ = _enrollment_jwt_and_jwks(Config(server_key_type="ec"))
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    token, _ = _enrollment_jwt_and_jwks(Config())
    assert jwt.get_unverified_header(token)["alg"] == "RS256"


def test_an_existing_data_folder_keeps_its_key(tmp_path, clock):
    first = ControllerPKI.load_or_create(tmp_path, clock=clock, server_key_type="ec")
    again = ControllerPKI.load_or_create(tmp_path, clock=clock)  # the default (RSA) must not replace it
    renamed = ControllerPKI.load_or_create(tmp_path, hostnames=("localhost", "new.example"), clock=clock)
    assert isinstance(again.server_key, ec.EllipticCurvePrivateKey)
    assert again.server_key.private_numbers() == first.server_key.private_numbers()
    assert renamed.server_key.private_numbers() == first.server_key.private_numbers()
    assert renamed.server_cert != first.server_cert


def test_an_explicit_other_type_replaces_the_server_key_only(tmp_path, clock):
    first = ControllerPKI.load_or_create(tmp_path, clock=clock, server_key_type="ec")
    second = ControllerPKI.load_or_create(tmp_path, clock=clock, server_key_type="rsa")
    assert isinstance(second.server_key, rsa.RSAPrivateKey) and second.jwt_signing_key()[1] == "RS256"
    assert second.root_cert == first.root_cert and second.intermediate_cert == first.intermediate_cert


def test_unknown_key_type_is_refused(tmp_path, clock):
    with pytest.raises(ValueError, match="server key type"):
        ControllerPKI.load_or_create(tmp_path, clock=clock, server_key_type="dsa")


def test_the_command_line_names_the_choices():
    result = subprocess.run(
        [sys.executable, "-m", "controller", "--server-key", "dsa"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and "--server-key" in result.stderr and "rsa" in result.stderr
