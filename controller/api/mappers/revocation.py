"""Revocations on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import render


def revocation_view(ctl, record: dict) -> dict:
    return {**render(ctl.revocations, record), "expiresAt": record["expires_at"]}
