"""MFA: the TOTP or recovery code of verify, authenticate and removal."""

from __future__ import annotations

from controller.model import schema as s

CODE = s.obj({"code": s.string()}, required=("code",))
OPTIONAL_CODE = s.obj({"code": s.string(nullable=True)})
