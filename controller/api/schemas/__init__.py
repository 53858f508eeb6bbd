"""Request-body JSON Schemas: one module per entity, beside the operations that take them.

Managers take records and know nothing of the wire; what a request body may look
like is the API's contract, checked in dispatch before a handler runs (400
``COULD_NOT_VALIDATE`` with field and reason, ``controller/model/validation.py``).
The pattern:

* ``<entity>.BODIES`` holds the create (POST), update (PUT) and patch (PATCH)
  schemas that ``crud(..., schemas=...)`` puts on the entity's operations; the
  other bodies of the entity (``identity.DISABLE``, ``authenticator.UPDATE_OWN``)
  sit beside it, named after what they carry.
* Schemas are built from the blocks in ``controller/model/schema.py`` (the domain
  builds its own rules, such as posture check types, from them too); a PATCH
  schema is derived with ``s.patch_of`` so create, update and patch never drift.

Nothing under ``controller/model`` declares request schemas on a manager
(``tests/unit/test_import_graph.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bodies:
    """The request bodies of an entity's create, update (PUT) and patch; None where it has none."""

    create: dict | None = None
    update: dict | None = None
    patch: dict | None = None


#: an entity whose operations take no body (lists, details, deletes)
NO_BODIES = Bodies()
