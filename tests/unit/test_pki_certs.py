"""certs.py: fingerprints, PEM chains, CA checks and chain verification."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives import serialization

from controller.errors import BadRequest
from controller.pki import fingerprint, is_ca, is_expired, load_pem_chain, verify_chain
from harness.client import pki as hp


def _now() -> datetime:
    # Per call: the certificates are dated when each test makes them, not at import.
    return datetime.now(timezone.utc)


def _fps(chain):
    return None if chain is None else [hp.sha1_fingerprint(c) for c in chain]


def _verify(leaf, intermediates, roots, *, dates=False, client_auth=False, now=None):
    return verify_chain(
        leaf, intermediates, roots, now=now or _now(), check_leaf_dates=dates, require_client_auth=client_auth
    )


@pytest.fixture(scope="module")
def third_party():
    """Root -> intermediate A -> intermediate B -> leaf, EC."""
    root = hp.make_root_ca("TP Root")
    inter_a = hp.make_intermediate_ca(root, "TP Inter A")
    inter_b = hp.make_intermediate_ca(inter_a, "TP Inter B")
    leaf = hp.make_leaf(inter_b, "tp-client")
    return root, inter_a, inter_b, leaf


# ------------------------------------------------------------------ fingerprints/PEM
def test_fingerprint_is_lowercase_sha1_hex(third_party):
    leaf = third_party[3]
    assert fingerprint(leaf.cert) == hp.sha1_fingerprint(leaf.cert)
    assert len(fingerprint(leaf.cert)) == 40 and fingerprint(leaf.cert) == fingerprint(leaf.cert).lower()


def test_load_pem_chain_keeps_order_and_skips_text(third_party):
    root, inter_a, _b, leaf = third_party
    text = "Bag Attributes: junk\n" + hp.pem(leaf.cert, inter_a.cert) + "trailing words\n" + hp.pem(root.cert)
    assert _fps(load_pem_chain(text)) == _fps([leaf.cert, inter_a.cert, root.cert])
    assert _fps(load_pem_chain(text.encode())) == _fps([leaf.cert, inter_a.cert, root.cert])


@pytest.mark.parametrize(
    "text,code",
    [
        ("", "COULD_NOT_PARSE_PEM_BLOCK"),
        ("hello", "COULD_NOT_PARSE_PEM_BLOCK"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "EXPECTED_PEM_CERTIFICATE"),
        ("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", "COULD_NOT_PARSE_DER_BLOCK"),
        ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "COULD_NOT_PARSE_DER_BLOCK"),
        (b"\xff\xfe", "INVALID_CERT_PEM"),
        (None, "INVALID_CERT_PEM"),
    ],
)
def test_load_pem_chain_errors(text, code):
    with pytest.raises(BadRequest) as info:
        load_pem_chain(text)
    assert info.value.code == code


def test_load_pem_chain_rejects_truncated_der(third_party):
    der = third_party[3].cert.public_bytes(serialization.Encoding.DER)
    body = base64.encodebytes(der[:-20]).decode()
    with pytest.raises(BadRequest) as info:
        load_pem_chain(f"-----BEGIN CERTIFICATE-----\n{body}-----END CERTIFICATE-----\n")
    assert info.value.code == "COULD_NOT_PARSE_DER_BLOCK"


def test_is_ca_and_is_expired(third_party):
    root, inter_a, _b, leaf = third_party
    assert is_ca(root.cert) and is_ca(inter_a.cert) and not is_ca(leaf.cert)
    assert not is_expired(leaf.cert, _now())
    assert is_expired(leaf.cert, _now() + timedelta(days=400))
    assert is_expired(leaf.cert, _now() - timedelta(days=1))
    assert is_expired(hp.make_leaf(root, expired=True).cert, _now())


# ------------------------------------------------------------------ verify_chain
@pytest.mark.parametrize("order", [(1, 2), (2, 1)])
def test_third_party_chain_any_order(third_party, order):
    root, inter_a, inter_b, leaf = third_party
    given = [(inter_a, inter_b)[i - 1].cert for i in order]
    chain = _verify(leaf.cert, given, [root.cert], client_auth=True)
    assert _fps(chain) == _fps([leaf.cert, inter_b.cert, inter_a.cert, root.cert])


def test_missing_intermediate_fails(third_party):
    root, inter_a, _b, leaf = third_party
    assert _verify(leaf.cert, [inter_a.cert], [root.cert]) is None


def test_wrong_root_fails(third_party):
    _root, inter_a, inter_b, leaf = third_party
    other = hp.make_root_ca("TP Root")  # same name, different key
    assert _verify(leaf.cert, [inter_a.cert, inter_b.cert], [other.cert]) is None


def test_intermediate_as_trust_anchor(third_party):
    _root, _a, inter_b, leaf = third_party
    assert _fps(_verify(leaf.cert, [], [inter_b.cert])) == _fps([leaf.cert, inter_b.cert])


def test_expired_leaf_only_fails_with_date_checking(third_party):
    root, inter_a, _b, _leaf = third_party
    expired = hp.make_leaf(inter_a, expired=True)
    assert _verify(expired.cert, [inter_a.cert], [root.cert], dates=False) is not None
    assert _verify(expired.cert, [inter_a.cert], [root.cert], dates=True) is None
    future = hp.make_leaf(inter_a, not_before=_now() + timedelta(days=2), not_after=_now() + timedelta(days=9))
    assert _verify(future.cert, [inter_a.cert], [root.cert], dates=True) is None


def test_expired_intermediate_fails_even_without_leaf_dates():
    root = hp.make_root_ca()
    inter = hp.make_intermediate_ca(root, expired=True)
    leaf = hp.make_leaf(inter)
    assert _verify(leaf.cert, [inter.cert], [root.cert]) is None


def test_expired_root_fails():
    root = hp.make_root_ca(expired=True)
    leaf = hp.make_leaf(root)
    assert _verify(leaf.cert, [], [root.cert]) is None


@pytest.mark.parametrize(
    "root_type,inter_type,leaf_type",
    [("rsa", "rsa", "rsa"), ("ec", "rsa", "ec"), ("rsa", "ec", "rsa"), ("ec384", "ec", "ed25519")],
)
def test_mixed_key_types(root_type, inter_type, leaf_type):
    root = hp.make_root_ca(key_type=root_type)
    inter = hp.make_intermediate_ca(root, key_type=inter_type)
    leaf = hp.make_leaf(inter, key_type=leaf_type)
    assert _fps(_verify(leaf.cert, [inter.cert], [root.cert])) == _fps([leaf.cert, inter.cert, root.cert])


def test_non_ca_issuer_rejected():
    root = hp.make_root_ca()
    not_a_ca = hp.make_leaf(root, "pretender", eku=None)
    victim = hp.make_leaf(not_a_ca, "victim")
    assert _verify(victim.cert, [not_a_ca.cert], [root.cert]) is None
    # Even when trusted directly as a root.
    assert _verify(victim.cert, [], [not_a_ca.cert]) is None


def test_path_length_enforced():
    root = hp.make_root_ca()
    limited = hp.make_intermediate_ca(root, "limited", path_length=0)
    below = hp.make_intermediate_ca(limited, "below")
    leaf = hp.make_leaf(below)
    assert _verify(leaf.cert, [limited.cert, below.cert], [root.cert]) is None
    assert _verify(hp.make_leaf(limited).cert, [limited.cert], [root.cert]) is not None


def test_client_auth_requirement():
    root = hp.make_root_ca()
    server_only = hp.make_leaf(root, eku=["serverAuth"])
    no_eku = hp.make_leaf(root, eku=None)
    assert _verify(server_only.cert, [], [root.cert], client_auth=True) is None
    assert _verify(server_only.cert, [], [root.cert], client_auth=False) is not None
    assert _verify(no_eku.cert, [], [root.cert], client_auth=True) is not None


def test_leaf_signed_by_other_key_with_same_issuer_name(third_party):
    root, inter_a, inter_b, _leaf = third_party
    impostor_ca = hp.make_intermediate_ca(hp.make_root_ca("x"), "TP Inter B")
    forged = hp.make_leaf(impostor_ca, "forged")
    assert _verify(forged.cert, [inter_a.cert, inter_b.cert], [root.cert]) is None


def test_root_as_leaf_and_self_signed_leaf():
    root = hp.make_root_ca()
    assert _fps(_verify(root.cert, [], [root.cert])) == _fps([root.cert])
    lone = hp.make_leaf(None, "self-signed")
    assert _verify(lone.cert, [], [root.cert]) is None


def test_many_same_name_intermediates_are_bounded():
    root = hp.make_root_ca("R")
    decoys = [hp.make_intermediate_ca(hp.make_root_ca("R"), "I").cert for _ in range(12)]
    real = hp.make_intermediate_ca(root, "I")
    leaf = hp.make_leaf(real)
    # Completes quickly and still finds the real path when it is reachable within budget.
    chain = _verify(leaf.cert, decoys[:4] + [real.cert], [root.cert])
    assert chain is not None
    assert _verify(leaf.cert, decoys, [root.cert]) is None


def test_adversarial_pem_is_linear():
    import time

    started = time.monotonic()
    with pytest.raises(BadRequest):
        load_pem_chain("-----BEGIN CERTIFICATE-----\n" * 50_000)
    assert time.monotonic() - started < 2


def test_a_remembered_signature_check_vouches_for_no_other_certificate_and_no_later_date(third_party):
    root, inter_a, inter_b, leaf = third_party
    assert _verify(leaf.cert, [inter_a.cert, inter_b.cert], [root.cert]) is not None
    # Same names, other keys: the earlier answer for the genuine certificates must not carry over.
    impostor_root = hp.make_root_ca("TP Root")
    assert _verify(leaf.cert, [inter_a.cert, inter_b.cert], [impostor_root.cert]) is None
    # Same certificates, later clock: dates are judged again although the signatures are known.
    later = max(inter_a.cert.not_valid_after_utc, inter_b.cert.not_valid_after_utc) + timedelta(days=1)
    assert _verify(leaf.cert, [inter_a.cert, inter_b.cert], [root.cert], now=later) is None
