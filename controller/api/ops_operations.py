"""Database operations (snapshot, data integrity) and identity tracing."""

from __future__ import annotations

from controller.api.call import Call
from controller.api.dispatch import write_json
from controller.api.operations import MANAGEMENT, Operation
from controller.api.schemas.operations import TRACE_SPEC


def create_database_snapshot(call: Call, *, database) -> None:
    database.snapshot()


def check_data_integrity(call: Call, *, integrity) -> None:
    integrity.start(fix=False)


def fix_data_integrity(call: Call, *, integrity) -> None:
    integrity.start(fix=True)


def data_integrity_results(call: Call, *, integrity) -> None:
    state = integrity.view()
    # NOTE: the real controller pages these results with limit -1.
    meta = {"pagination": {"limit": -1, "offset": 0, "totalCount": len(state["results"])}}
    write_json(call.resp, {"data": state, "meta": meta})


def update_identity_tracing(call: Call, *, traces) -> dict:
    return traces.update(call.param(), call.body)


def operations() -> list[Operation]:
    tag = "Database"
    return [
        Operation(
            "createDatabaseSnapshot",
            "POST",
            "/database/snapshot",
            create_database_snapshot,
            apis=(MANAGEMENT,),
            reply="empty",
            tag=tag,
            summary="Write a consistent copy of the database (once a minute at most)",
        ),
        Operation(
            "checkDataIntegrity",
            "POST",
            "/database/check-data-integrity",
            check_data_integrity,
            apis=(MANAGEMENT,),
            reply="empty",
            status=202,
            tag=tag,
            summary="Start a background data integrity check",
        ),
        Operation(
            "dataIntegrityResults",
            "GET",
            "/database/data-integrity-results",
            data_integrity_results,
            apis=(MANAGEMENT,),
            reply="raw",
            tag=tag,
            summary="Return the state of the last integrity run",
        ),
        Operation(
            "fixDataIntegrity",
            "POST",
            "/database/fix-data-integrity",
            fix_data_integrity,
            apis=(MANAGEMENT,),
            reply="empty",
            status=202,
            tag=tag,
            summary="Snapshot, then check and fix data integrity in the background",
        ),
        Operation(
            "updateIdentityTracing",
            "PUT",
            "/identities/{id}/trace",
            update_identity_tracing,
            apis=(MANAGEMENT,),
            body=TRACE_SPEC,
            tag="Identity",
            summary="Enable or disable tracing of an identity",
        ),
    ]
