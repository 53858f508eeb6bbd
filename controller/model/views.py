"""The wire shape every stored entity shares: ``_links``, references, the common fields.

Pure functions of records, used by the API layer's mappers (``controller/api/mappers``) and,
until their view hooks move there too, by the managers' generic ``view``/``extend_view``.
"""

from __future__ import annotations


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
