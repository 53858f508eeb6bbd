"""The one way to define an entity: an :class:`EntityManager` subclass.

A manager names its declaration (``controller/entities.py``: table, collection,
labels) and declares the attributes a client may set (:class:`Attr`), its
filterable fields and its links (request schemas are the API's: ``controller/api/schemas``).
The base class then provides get, list, create, replace (PUT), patch and delete with the
real controller's semantics:

* PUT writes every attribute: omitted optional ones take their default.
* PATCH changes only the keys present with a non-null value that the entity allows.
* Names are unique per table (or per shared name space).
* Deletes run the cascades (declared in ``controller/entities.py`` or registered) in the same transaction.

Records are snake_case dicts; wire JSON is camelCase and is produced only by
the API layer's mappers (``controller/api/mappers``), from this declaration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from controller.clock import Clock, rfc3339
from controller.entities import ENTITIES, Entity
from controller.errors import FieldError, NotFound
from controller.ids import Ids
from controller.model.cascades import Cascades
from controller.store.change_context import ChangeContext
from controller.store.db import Store
from controller.store.filter_index import FilterIndex
from controller.store.indexes import UniqueIndex
from controller.store.query import Field, FieldSet, list_page
from controller.store.tables import copy_value

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    """``roleAttributes`` -> ``role_attributes``."""
    return _CAMEL.sub("_", name).lower()


@dataclass(frozen=True)
class Attr:
    """A wire attribute stored on the record under its snake_case key."""

    wire: str
    #: value taken on create and PUT when the body omits it (callables are called)
    default: Any = None
    on_create: bool = True
    on_update: bool = True
    #: rendered on the wire (False for secrets such as password hashes)
    public: bool = True
    #: left out of the wire view while None (the real controller's ``omitempty`` fields)
    omit_none: bool = False
    key: str = field(default="")

    def __post_init__(self):
        if not self.key:
            object.__setattr__(self, "key", snake(self.wire))

    def default_value(self) -> Any:
        value = self.default() if callable(self.default) else self.default
        # Only containers can be changed in place; scalars (most defaults) need no copy.
        return copy_value(value) if isinstance(value, (dict, list)) else value


@dataclass(frozen=True)
class Core:
    """What every manager uses: the store, the clock, id generation and the delete cascades."""

    store: Store
    clock: Clock
    ids: Ids
    cascades: Cascades


def common_fields() -> list[Field]:
    """Filterable fields every entity has (id, createdAt, updatedAt are implicit)."""
    return []


def name_field() -> Field:
    return Field("name", "string", lambda r: r.get("name"))


def set_field(name: str, key: str) -> Field:
    return Field(name, "set", lambda r: r.get(key) or [], sortable=False)


def scalar(name: str, kind: str, key: str | None = None) -> Field:
    key = key or snake(name)
    return Field(name, kind, lambda r: r.get(key))


class EntityManager:
    """Generic CRUD over one store table; subclasses declare, rarely override."""

    #: the entity's one declaration (``controller/entities.py``): names come from it
    declaration: Entity | None = None
    table: str = ""
    collection: str = ""
    entity: str = ""
    label: str = ""
    attrs: tuple[Attr, ...] = ()
    filter_fields: tuple[Field, ...] = ()
    #: sub-resource links rendered in ``_links``
    link_names: tuple[str, ...] = ()
    unique_names: bool = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("declaration")
        if declared is not None:
            cls.table, cls.collection, cls.entity, cls.label = (
                declared.table,
                declared.collection,
                declared.entity,
                declared.label,
            )

    def __init__(self, core: Core):
        self.store, self.clock, self.ids, self.cascades = core.store, core.clock, core.ids, core.cascades
        self.fields = FieldSet(self.filter_fields)
        self.names = UniqueIndex(self.store, self.table, lambda r: r.get("name")) if self.unique_names else None
        self.filter_index = FilterIndex(self.store, self.table, self.fields)
        self._settable_update = {a.wire: a for a in self.attrs if a.on_update}

    # -- reads --------------------------------------------------------------
    def find(self, entity_id: str) -> dict | None:
        return self.store.get(self.table, entity_id) if isinstance(entity_id, str) else None

    def get(self, entity_id: str) -> dict:
        record = self.find(entity_id)
        if record is None:
            raise NotFound(self.label, entity_id)
        return record

    def find_by_name(self, name: str) -> dict | None:
        entity_id = self.names.get(name) if self.names is not None else None
        return self.find(entity_id) if entity_id else None

    def list(
        self, args: dict, *, candidates: Iterable[dict] | None = None, extra: Callable[[dict], bool] | None = None
    ):
        if candidates is None:
            candidates = self.filter_index.candidates(args.get("filter"))
        records = self.store.all(self.table) if candidates is None else candidates
        return list_page(records, self.fields, extra=extra, **args)

    # -- writes -------------------------------------------------------------
    def create(self, body: dict, *, context: ChangeContext | None = None) -> str:
        now = self._now()
        record = {"id": self.new_id(body), "created_at": now, "updated_at": now, "tags": body.get("tags") or {}}
        for attr in self.attrs:
            if attr.on_create:
                value = body.get(attr.wire)
                record[attr.key] = attr.default_value() if value is None else copy_value(value)
        with self.store.lock, self.store.transaction(context):
            self.prepare(record, None, body)
            self.check_name(record, None)
            self.store.insert(self.table, record["id"], record)
            self.after_create(record, body)
        return record["id"]

    def update(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        """PUT: every updatable attribute is written; omitted ones take defaults."""
        changes = {"tags": body.get("tags") or {}}
        for attr in self._settable_update.values():
            value = body.get(attr.wire)
            changes[attr.key] = attr.default_value() if value is None else copy_value(value)
        self._write_update(entity_id, changes, body, context)

    def patch(self, entity_id: str, body: dict, *, context: ChangeContext | None = None) -> None:
        """PATCH: keys present with a non-null value, intersected with those allowed."""
        changes = {}
        if body.get("tags") is not None:
            changes["tags"] = body["tags"]
        for wire, value in body.items():
            attr = self._settable_update.get(wire)
            if attr is not None and value is not None:
                changes[attr.key] = copy_value(value)
        self._write_update(entity_id, changes, body, context)

    def _write_update(self, entity_id: str, changes: dict, body: dict, context: ChangeContext | None) -> None:
        with self.store.lock, self.store.transaction(context):
            old = self.get(entity_id)
            record = {**old, **changes, "updated_at": self._now()}
            self.prepare(record, old, body)
            self.check_name(record, old)
            self.store.put(self.table, entity_id, record)
            self.after_update(record, old, body)

    def delete(self, entity_id: str, *, context: ChangeContext | None = None) -> None:
        with self.store.lock, self.store.transaction(context):
            record = self.get(entity_id)
            self.before_delete(record)
            self.cascades.run(self.table, record)
            self.store.delete(self.table, entity_id)

    def touch(self, entity_id: str, *, context: ChangeContext | None = None, **changes) -> dict:
        """Write internal changes (not client attributes) to a record."""
        with self.store.lock, self.store.transaction(context):
            record = {**self.get(entity_id), **changes, "updated_at": self._now()}
            self.store.put(self.table, entity_id, record)
            return record

    # -- hooks for subclasses -------------------------------------------------
    def new_id(self, body: dict) -> str:
        return self.ids.short()

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        """Validate and normalise ``record`` in place before it is written."""

    def after_create(self, record: dict, body: dict) -> None:
        """Write related records in the same transaction."""

    def after_update(self, record: dict, old: dict, body: dict) -> None:
        """Write related records in the same transaction."""

    def before_delete(self, record: dict) -> None:
        """Raise to refuse a delete (409, 400)."""

    # -- helpers ----------------------------------------------------------
    def check_name(self, record: dict, old: dict | None) -> None:
        if self.names is None:
            return
        name = record.get("name")
        if not isinstance(name, str) or name.strip() == "":
            raise FieldError("name", "name in body is required", name)
        holder = self.names.get(name)
        if holder is not None and holder != record["id"]:
            raise FieldError("name", f"duplicate value '{name}' in unique index on {self.table} store", name)

    def require_ref(self, record: dict, field_name: str) -> None:
        """404 with the target's label unless ``record[field_name]`` names a record (a declared reference)."""
        target = ENTITIES[self.declaration.ref(field_name).target]
        value = record.get(field_name)
        if not target.owns(self.store.get(target.table, value) if isinstance(value, str) else None):
            raise NotFound(target.label, value)

    def _now(self) -> str:
        return rfc3339(self.clock.now())
