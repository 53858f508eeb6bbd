"""Revocations on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import render


def revocation_view(record: dict, *, revocations) -> dict:
    return {**render(revocations, record), "expiresAt": record["expires_at"]}
