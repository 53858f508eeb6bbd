"""The wire shape every stored entity shares, and the generic mapper of a manager's declaration.

``render(manager, record)`` gives the fields a manager declares (``collection``,
``link_names``, the public ``attrs``); an entity's own mapper starts from it and
adds its computed fields. ``listing`` turns a page of ``manager.list`` into a
``Listing`` of rendered records.
"""

from __future__ import annotations

from typing import Callable, Iterable

from controller.store.query import Listing

#: a mapper: a record in, the wire dict out (its services bound by ``controller/api/wiring.py``)
View = Callable[..., dict]


def links(collection: str, entity_id: str, names: tuple[str, ...] = ()) -> dict:
    out = {"self": {"href": f"./{collection}/{entity_id}"}}
    for name in names:
        out[name] = {"href": f"./{collection}/{entity_id}/{name}"}
    return out


def entity_ref(collection: str, entity_id: str, name: str | None, entity: str | None = None) -> dict:
    """An entity reference ``{_links, entity, id, name}``; ``name`` is omitted when unknown, as the real controller."""
    out = {"_links": links(collection, entity_id), "entity": entity or collection, "id": entity_id}
    if name is not None:
        out["name"] = name
    return out


def base_view(record: dict, collection: str, link_names: tuple[str, ...] = ()) -> dict:
    """The common fields of every stored entity."""
    return {
        "_links": links(collection, record["id"], link_names),
        "createdAt": record.get("created_at"),
        "id": record["id"],
        "tags": record.get("tags") or {},
        "updatedAt": record.get("updated_at"),
    }


def render(manager, record: dict) -> dict:
    """The common fields plus the public attributes ``manager`` (instance or class) declares."""
    out = base_view(record, manager.collection, manager.link_names)
    for attr in manager.attrs:
        if attr.public and not (attr.omit_none and record.get(attr.key) is None):
            out[attr.wire] = record.get(attr.key)
    return out


def generic(manager_cls) -> View:
    """The mapper of an entity without computed fields: its declaration alone."""
    return lambda record: render(manager_cls, record)


def ref(manager, entity_id: str | None) -> dict | None:
    """A reference to one of ``manager``'s records ``{_links, entity, id, name}``."""
    if entity_id is None:
        return None
    record = manager.find(entity_id)
    return entity_ref(manager.collection, entity_id, record.get("name") if record else None, manager.entity)


def listing(
    manager, args: dict, render_one: Callable[[dict], dict], *, candidates: Iterable[dict] | None = None
) -> Listing:
    """A page of ``manager.list(args)`` rendered by ``render_one``, with its pagination and filterable fields."""
    page = manager.list(args, candidates=candidates)
    return Listing([render_one(r) for r in page.items], page.pagination(), manager.fields.names())
