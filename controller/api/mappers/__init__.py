"""Wire mappers: records in, the real controller's JSON out, one module per entity.

Managers return snake_case records and know nothing of the wire; the API layer
renders them here, as OpenZiti pairs each ``<entity>_router`` with its
``<entity>_api_model``. The pattern:

* ``entity.render(manager, record)`` renders what a manager declares: the common
  fields, ``_links`` from ``collection`` and ``link_names``, the public ``attrs``
  (``omit_none`` ones only when set). An entity without computed fields needs
  nothing more: ``crud()`` uses ``entity.generic(manager_cls)`` by default.
* An entity with computed fields has a module here whose ``<entity>_view(record, *, <services>)``
  starts from ``render`` and adds them (references with ``entity.ref``, presence,
  summaries). The keyword-only parameters name the services it reads (``identities``,
  ``router_presence``) or other mappers; ``controller/api/wiring.py`` binds them once per
  app, and a handler names the mapper the same way (``def h(call, *, identity_view)``).
  A mapper renders: what takes a domain computation (a service's permissions, posture
  results) is computed by a manager or query object (``ServiceAccess.sight``) and handed in.
  Mapper names are unique across this package (they are what handlers inject).
* Lists: ``entity.listing(manager, args, render_one, candidates=...)`` pages
  ``manager.list`` and renders each record with a bound mapper.

Nothing under ``controller/model``, ``auth``, ``enroll``, ``oidc``, ``policy``,
``store`` or ``pki`` renders wire views (``tests/unit/test_import_graph.py``).
"""
