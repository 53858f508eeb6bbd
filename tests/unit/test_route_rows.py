"""Route tables read as tables: one row per operation over a module's defaults; ``crud`` kinds are data."""

from __future__ import annotations

from controller.api.crud import KIND_TABLE, KINDS, crud
from controller.api.operations import ADMIN, BOTH, MANAGEMENT, PARTIAL, operation_defaults
from controller.model.identity import IdentityManager


def handler(call):
    return None


def test_a_row_takes_the_module_defaults_and_overrides_what_it_names():
    op = operation_defaults(apis=BOTH, auth=PARTIAL, tag="MFA")
    plain = op("detailThing", "GET /things/{id}", handler, "Return a thing")
    special = op("deleteThing", "DELETE /things/{id}", handler, "Delete a thing", auth=ADMIN, reply="empty")
    assert (plain.method, plain.path, plain.apis, plain.auth, plain.tag) == (
        "GET",
        "/things/{id}",
        BOTH,
        PARTIAL,
        "MFA",
    )
    assert (plain.summary, plain.reply, plain.status) == ("Return a thing", "detail", 200)
    assert (special.method, special.auth, special.reply, special.tag) == ("DELETE", ADMIN, "empty", "MFA")


def test_crud_builds_each_kind_from_its_row():
    ops = {op.op_id: op for op in crud(IdentityManager)}
    assert [op.method for op in ops.values()] == [KIND_TABLE[kind].method for kind in KINDS]
    assert ops["listIdentities"].path == "/identities" and ops["deleteIdentity"].path == "/identities/{id}"
    assert ops["createIdentity"].status == 201 and ops["createIdentity"].summary == "Create a identity"
    assert ops["patchIdentity"].summary == "Update the supplied fields of a identity"
    assert all(op.apis == (MANAGEMENT,) and op.auth == ADMIN for op in ops.values())


def test_crud_takes_a_subset_of_kinds_in_the_order_given_and_a_handler_of_the_caller():
    ops = crud(IdentityManager, kinds=("delete", "list"), handlers={"list": handler})
    assert [op.op_id for op in ops] == ["deleteIdentity", "listIdentities"]
    assert ops[1].handler is handler and ops[1].uses is None and ops[0].uses["manager"] == "identities"
