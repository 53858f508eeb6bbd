"""Records kept small in memory: equal strings shared, as values and as table keys.

A record parsed from JSON owns a fresh string for every value, so a million
identities hold a million copies of ``"default"``, of each role attribute and
of a bulk import's timestamps. :class:`Sharing` makes records point at one
string per distinct value instead, field by field: each field keeps a pool of
the values it has seen, and a field that turns out to hold mostly distinct
values (ids, names, later timestamps) stops pooling once its pool is full.
The table's key and the record's ``id`` become one object too, and so do
``updated_at`` and ``created_at`` while they are equal.

Strings are immutable, so sharing them changes nothing but size. Empty dicts
and lists (``tags``, ``app_data``...) become one shared :data:`EMPTY_DICT` /
:data:`EMPTY_LIST` each, which equal ``{}`` and ``[]``, serialise alike and copy
to fresh ones, but refuse to be changed: stored records are immutable (writers
replace them), so a change in place was already a bug, and now it is a loud one.
"""

from __future__ import annotations

POOL_SIZE = 2048  # distinct values a field pools before it is judged unique-valued


def _refuse(self, *args, **kwargs):
    raise TypeError("stored records are immutable: build a new value instead of changing this one")


class _EmptyDict(dict):
    """The empty dict every stored record shares."""

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = _refuse

    def copy(self) -> dict:
        return {}

    def __copy__(self) -> dict:
        return {}

    def __deepcopy__(self, memo) -> dict:
        return {}

    def __reduce__(self):
        return dict, ()


class _EmptyList(list):
    """The empty list every stored record shares."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = pop = remove = _refuse
    sort = reverse = clear = _refuse

    def copy(self) -> list:
        return []

    def __copy__(self) -> list:
        return []

    def __deepcopy__(self, memo) -> list:
        return []

    def __reduce__(self):
        return list, ()


EMPTY_DICT = _EmptyDict()
EMPTY_LIST = _EmptyList()
_NEW = _EmptyDict()  # the pool of a field not seen yet (compared by identity)


class Sharing:
    """Per-field pools of strings; ``record`` rewrites a fresh record to use them."""

    def __init__(self, pool_size: int = POOL_SIZE):
        self._pool_size = pool_size
        #: field -> its pool of values, or None once the field proved unique-valued
        self._pools: dict[str, dict[str, str] | None] = {}

    def record(self, key: str, doc: dict) -> tuple[str, dict]:
        """(key, doc) with ``doc``'s strings shared, changed in place: ``doc`` must be fresh."""
        self._share_values(doc)
        created = doc.get("created_at")
        if created is not None and doc.get("updated_at") == created:
            doc["updated_at"] = created
        record_id = doc.get("id")
        return (record_id if record_id == key else key), doc

    def _share_values(self, doc: dict) -> None:
        # NOTE: the hot loop of loading a store (16 fields x 1M records): few calls, no attribute lookups.
        pools = self._pools
        for field, value in doc.items():
            kind = type(value)
            if kind is str:
                pool = pools.get(field, _NEW)
                if pool is not None:
                    shared = pool.get(value) if pool is not _NEW else None
                    if shared is None:
                        shared = self._pooled(field, value)
                    if shared is not value:
                        doc[field] = shared
            elif kind is list:
                if not value:
                    doc[field] = EMPTY_LIST
                elif pools.get(field, _NEW) is not None:
                    value[:] = [self._pooled(field, item) if type(item) is str else item for item in value]
            elif kind is dict:
                if value:
                    self._share_values(value)
                else:
                    doc[field] = EMPTY_DICT

    def _pooled(self, field: str, value: str) -> str:
        pool = self._pools.get(field, _NEW)
        if pool is None:
            return value
        if pool is _NEW:
            pool = self._pools[field] = {}
        shared = pool.setdefault(value, value)
        if len(pool) >= self._pool_size:
            self._pools[field] = None  # mostly distinct values: pooling them would only cost memory
        return shared
