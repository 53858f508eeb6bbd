"""Controller settings: the global record and per-controller overrides.

NOTE: like the real API document, replace, patch and delete live on
``/controller-settings/{id}/effective`` while detail is on ``/controller-settings/{id}``.
"""

from __future__ import annotations

from controller.api.call import Call
from controller.api.crud import crud
from controller.api.mappers.settings import setting_view
from controller.api.operations import MANAGEMENT, Operation
from controller.api.schemas import settings
from controller.model.settings import ControllerSettingManager

EFFECTIVE = "/controller-settings/{id}/effective"


def detail_effective(call: Call, *, effective_view) -> dict:
    return effective_view(call.param())


def operations() -> list[Operation]:
    moved = {kind: {"path": EFFECTIVE} for kind in ("delete", "patch", "update")}
    first = crud(
        ControllerSettingManager,
        kinds=("list", "create", "detail"),
        schemas=settings.BODIES,
        tag="Settings",
        view=setting_view,
    )
    last = crud(
        ControllerSettingManager,
        kinds=("delete", "patch", "update"),
        schemas=settings.BODIES,
        overrides=moved,
        tag="Settings",
        view=setting_view,
    )
    effective = Operation(
        "detailControllerSettingEffective",
        "GET",
        EFFECTIVE,
        detail_effective,
        apis=(MANAGEMENT,),
        tag="Settings",
        summary="Retrieve a controller's effective settings",
    )
    return [*first, effective, *last]
