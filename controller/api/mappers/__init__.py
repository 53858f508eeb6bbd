"""Wire mappers: records in, the real controller's JSON out, one module per entity.

Managers return snake_case records and know nothing of the wire; the API layer
renders them here, as OpenZiti pairs each ``<entity>_router`` with its
``<entity>_api_model``. The pattern:

* ``entity.render(manager, record)`` renders what a manager declares: the common
  fields, ``_links`` from ``collection`` and ``link_names``, the public ``attrs``
  (``omit_none`` ones only when set). An entity without computed fields needs
  nothing more: ``crud()`` uses ``entity.generic(manager_cls)`` by default.
* An entity with computed fields has a module here whose ``<entity>_view(ctl, record)``
  starts from ``render`` and adds them (references with ``entity.ref``, presence,
  summaries). It may read the controller registry ``ctl``: mappers are API layer.
  It is passed to ``crud(..., view=...)`` and to every listing of that entity.
* Lists: ``entity.listing(manager, args, render_one, candidates=...)`` pages
  ``manager.list`` and renders each record; ``functools.partial(view, ctl)`` binds a mapper.

Nothing under ``controller/model``, ``auth``, ``enroll``, ``oidc``, ``policy``,
``store`` or ``pki`` renders wire views (``tests/unit/test_import_graph.py``).
"""
