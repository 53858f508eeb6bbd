"""Role lists of policies: validation, the reference matching rule and display.

A role entry is ``#<attribute>``, ``@<entity id>`` or ``#all``. ``matches`` is the
plain rule of the data model; the engine keeps indexes but must agree with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from controller.errors import FieldError

ROLE_PREFIX = "#"
ENTITY_PREFIX = "@"
ALL_ROLE = "#all"
ALL_OF = "AllOf"
ANY_OF = "AnyOf"
SEMANTICS = (ALL_OF, ANY_OF)

# The entity type named in "no <kind> found with the given ids", per role-list field.
KIND_OF_FIELD = {
    "identityRoles": "identities",
    "serviceRoles": "services",
    "edgeRouterRoles": "routers",
    "postureCheckRoles": "postureChecks",
}

REASON_ALL_ALONE = f"if using {ALL_ROLE}, it should be the only role specified"
REASON_PREFIX = "role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)"


def normalize_semantic(semantic: str | None) -> str | None:
    """``AllOf``/``AnyOf`` whatever the case, else None."""
    if not isinstance(semantic, str):
        return None
    for known in SEMANTICS:
        if semantic.lower() == known.lower():
            return known
    return None


def validate_roles(
    roles: Iterable[Any] | None,
    field: str,
    kind_ids_exist: Callable[[list[str]], list[str]] | None = None,
    *,
    kind: str | None = None,
) -> list[str]:
    """Check a policy role list and return it sorted and de-duplicated.

    ``kind_ids_exist`` receives the ``@`` ids and returns those that do not exist.
    ``kind`` names the entity type in the error; by default it follows ``field``.
    """
    values = list(roles or [])
    # Same order of checks as the real controller: #all first, then prefixes, then ids.
    if len(values) > 1 and ALL_ROLE in values:
        raise FieldError(field, REASON_ALL_ALONE, values)
    invalid = [value for value in values if not _is_role_entry(value)]
    if invalid:
        raise FieldError(field, REASON_PREFIX, invalid)
    ids = sorted({value[1:] for value in values if value.startswith(ENTITY_PREFIX)})
    if ids and kind_ids_exist is not None:
        missing = list(kind_ids_exist(ids))
        if missing:
            kind_name = kind or KIND_OF_FIELD.get(field, "entities")
            raise FieldError(field, f"no {kind_name} found with the given ids", missing)
    return sorted(set(values))


def validate_role_attributes(attrs: Iterable[Any] | None, field: str = "roleAttributes") -> list[str]:
    """Check an entity's role attributes: strings not starting with ``#`` or ``@``."""
    values = list(attrs or [])
    for value in values:
        if not isinstance(value, str):
            raise FieldError(field, "role attributes must be strings", value)
        for prefix in (ROLE_PREFIX, ENTITY_PREFIX):
            if value.startswith(prefix):
                raise FieldError(field, f"role attributes may not be prefixed with {prefix}", value)
    return values


def matches(semantic: str, roles: Iterable[str], entity_id: str, entity_attrs: Iterable[str]) -> bool:
    """Whether an entity matches one role list of a policy (the reference rule).

    ``@id`` and ``#all`` ignore the semantic; ``#attr`` entries need all (AllOf)
    or any (AnyOf) of them; an empty list matches nothing.
    """
    wanted = []
    for role in roles:
        if role == ALL_ROLE or role == ENTITY_PREFIX + entity_id:
            return True
        if role.startswith(ROLE_PREFIX):
            wanted.append(role[1:])
    if not wanted:
        return False
    attrs = set(entity_attrs)
    normalized = normalize_semantic(semantic)
    if normalized == ALL_OF:
        return all(attr in attrs for attr in wanted)
    if normalized == ANY_OF:
        return any(attr in attrs for attr in wanted)
    return False


def roles_display(roles: Iterable[str], name_of: Callable[[str], str | None]) -> list[dict[str, str]]:
    """``*RolesDisplay``: ``#`` entries as is, ``@id`` as ``@<name>``; unreadable ids omitted."""
    display = []
    for role in roles:
        if role.startswith(ENTITY_PREFIX):
            name = name_of(role[1:])
            if name is None:
                continue
            display.append({"role": role, "name": ENTITY_PREFIX + name})
        else:
            display.append({"role": role, "name": role})
    return display


def split_roles(roles: Iterable[str]) -> tuple[list[str], list[str], bool]:
    """(attributes, ids, has #all) of a role list; entries without a prefix are dropped."""
    attrs, ids, has_all = [], [], False
    for role in roles:
        if role == ALL_ROLE:
            has_all = True
        elif role.startswith(ROLE_PREFIX):
            attrs.append(role[1:])
        elif role.startswith(ENTITY_PREFIX):
            ids.append(role[1:])
    return attrs, ids, has_all


def _is_role_entry(value: Any) -> bool:
    return isinstance(value, str) and (value.startswith(ROLE_PREFIX) or value.startswith(ENTITY_PREFIX))
