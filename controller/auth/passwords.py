"""Password hashing with the real controller's Argon2id parameters.

Argon2id, time 1, memory 3072 KiB, parallelism 4, 32-byte key, 10-byte random
salt; hash and salt stored as standard base64; constant-time comparison.
"""

from __future__ import annotations

import base64
import hmac
import os

from argon2.low_level import Type, hash_secret_raw

TIME_COST = 1
MEMORY_KIB = 3072
PARALLELISM = 4
KEY_LENGTH = 32
SALT_LENGTH = 10


def _derive(password: str, salt: bytes) -> bytes:
    return hash_secret_raw(
        password.encode("utf-8"),
        salt,
        time_cost=TIME_COST,
        memory_cost=MEMORY_KIB,
        parallelism=PARALLELISM,
        hash_len=KEY_LENGTH,
        type=Type.ID,
    )


def hash_password(password: str) -> dict:
    """Return ``{"password_hash", "salt"}`` (both base64) for storing on an authenticator."""
    salt = os.urandom(SALT_LENGTH)
    return {
        "password_hash": base64.b64encode(_derive(password, salt)).decode("ascii"),
        "salt": base64.b64encode(salt).decode("ascii"),
    }


def verify_password(password: str, record: dict) -> bool:
    """True when ``password`` matches the hash stored on ``record``."""
    stored, salt = record.get("password_hash"), record.get("salt")
    if not stored or not salt or not isinstance(password, str):
        return False
    derived = _derive(password, base64.b64decode(salt))
    return hmac.compare_digest(derived, base64.b64decode(stored))


def check_rules(password: str, policy_updb: dict) -> str | None:
    """The authentication policy's password rules; a reason when broken, else None."""
    min_length = max(5, int(policy_updb.get("min_password_length") or 5))
    if len(password) < min_length:
        return f"password must be at least {min_length} characters long"
    if policy_updb.get("require_mixed_case") and (password.lower() == password or password.upper() == password):
        return "password must contain upper and lower case characters"
    if policy_updb.get("require_number_char") and not any(ch.isdigit() for ch in password):
        return "password must contain a number"
    if policy_updb.get("require_special_char") and all(ch.isalnum() for ch in password):
        return "password must contain a special character"
    return None
