"""The entity declarations (``controller/entities.py``) are consistent, and what derives from them follows."""

from __future__ import annotations

import pytest

from controller.app import create_app
from controller.entities import (
    CASCADE,
    CLEAR,
    ENTITIES,
    REFUSE,
    REMOVE_ITEM,
    ROLE_TARGETS,
    references,
    role_references,
    target_table,
)
from controller.model.base import EntityManager
from controller.ops.integrity import CORE_REFERENCES, ROLE_REFERENCES
from controller.policy.kinds import KINDS as ENGINE_KINDS
from controller.policy.kinds import POLICY_KINDS
from harness.client.kinds import BY_KEY, KINDS
from tests.api.reference_operations import REFERENCE

#: operations the real management API moves off the entity's own path
MOVED = {"updateControllerSetting", "patchControllerSetting", "deleteControllerSetting"}


@pytest.fixture(scope="module")
def controller():
    app = create_app()
    yield app.controller
    app.controller.close()


def test_every_reference_names_a_declared_entity_with_a_known_rule():
    for table, ref in references():
        assert ref.target in ENTITIES, f"{table}.{ref.field}"
        assert ref.on_delete in (CASCADE, CLEAR, REMOVE_ITEM, REFUSE), f"{table}.{ref.field}"
        assert ref.on_delete != REFUSE or ref.repair, f"{table}.{ref.field}: a refusal needs a repair"
        assert (ref.fix == REMOVE_ITEM) == ref.many, f"{table}.{ref.field}: only lists lose items"
    for table, wire, target in role_references():
        assert target.key in ENTITIES and wire.endswith("Roles"), f"{table}.{wire}"


def test_role_targets_are_the_policy_engines_kinds():
    assert set(ROLE_TARGETS) == set(ENGINE_KINDS)
    for entity in ENTITIES.values():
        if entity.roles:
            assert tuple(ENTITIES[target].kind for target in entity.roles.values()) == POLICY_KINDS[entity.kind]


def test_every_served_entity_has_its_manager_and_every_manager_is_declared(controller):
    for entity in ENTITIES.values():
        if entity.served:
            manager = controller.bindable()[entity.key]
            assert type(manager).declaration is entity, entity.key
            assert (manager.table, manager.collection, manager.label) == (entity.table, entity.collection, entity.label)
    for manager in controller.bindable().values():
        if isinstance(manager, EntityManager):
            assert ENTITIES.get(type(manager).declaration.key) is type(manager).declaration


def test_every_stored_table_is_declared(controller):
    tables = {entity.table for entity in ENTITIES.values()}
    assert set(controller.store.tables()) <= tables


def test_declared_names_are_the_real_operations_on_the_declared_paths():
    management = {row["operationId"]: row for row in REFERENCE if row["api"] == "management"}
    seen = 0
    for entity in ENTITIES.values():
        if entity.op_id("list") not in management:
            continue  # not a plain collection (MFA lives on /current-identity/mfa)
        for kind, suffix in (
            ("list", ""),
            ("create", ""),
            ("detail", "/{id}"),
            ("patch", "/{id}"),
            ("delete", "/{id}"),
        ):
            row = management.get(entity.op_id(kind))
            if row is not None and row["operationId"] not in MOVED:
                assert row["path"] == f"/{entity.collection}{suffix}", row
                seen += 1
    assert seen > 80


def test_delete_cascades_name_their_hooks(controller):
    for table, ref in references():
        if ref.hook:
            assert ref.hook in controller.cascades.hook_names(target_table(ref)), f"{table}.{ref.field}"
    for kind, target in ROLE_TARGETS.items():
        assert f"forget_in_policies({kind})" in controller.cascades.hook_names(target.table)


def test_integrity_checks_every_declared_reference_and_role_list():
    declared = {(table, ref.field, target_table(ref), ref.fix) for table, ref in references()}
    assert {(r.table, r.field, r.target, r.fix) for r in CORE_REFERENCES} == declared
    assert len(ROLE_REFERENCES) == len(role_references()) == 7
    assert ("edge_router_policies", "edge_router_roles", "routers") in ROLE_REFERENCES


def test_harness_kinds_derive_their_names_and_links_from_the_declarations():
    reference_ids = {row["operationId"] for row in REFERENCE if row["api"] == "management"}
    for kind in KINDS:
        assert ENTITIES[kind.entity.key] is kind.entity
        assert {kind.list_op, kind.create_op, kind.patch_op, kind.delete_op} <= reference_ids, kind.key
        for name, ref in kind.refs.items():
            assert ref.kind in BY_KEY, f"{kind.key}.{name}"
        for wire, target in kind.roles.items():
            assert target in BY_KEY, f"{kind.key}.{wire}"
    assert BY_KEY["identities"].refs["authPolicy"].wire == "authPolicyId"
    assert BY_KEY["servicePolicies"].roles["postureCheckRoles"] == "postureChecks"
