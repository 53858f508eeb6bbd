"""Revocations (management, admin)."""

from __future__ import annotations

from controller.api.crud import crud
from controller.api.mappers.revocation import revocation_view
from controller.api.operations import Operation
from controller.api.schemas import revocation
from controller.model.revocation import RevocationManager


def operations() -> list[Operation]:
    return crud(RevocationManager, schemas=revocation.BODIES, kinds=("list", "create", "detail"), view=revocation_view)
