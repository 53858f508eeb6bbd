"""Handlers and mappers name what they use: their keyword-only parameters.

A handler takes the request (``call``) and, after ``*``, the services it uses::

    def verify_ca(call: Call, *, cas) -> None:
        cas.verify(call.param(), call.body, context=call.change)


    def identity_services(call: Call, *, identities, engine, services, service_view) -> Listing: ...

A keyword-only parameter without a default names one of:

* a domain service of the controller: an attribute ``Controller`` declares (``cas``,
  ``engine``, ``service_access``; ``controller/registry.py``);
* an API-level service the app adds: ``routes`` (the route table), ``openapi`` (its
  documents), ``handlers`` (every operation's bound handler);
* a mapper of ``controller/api/mappers`` (``service_view``), itself bound the same way:
  a mapper names the services it reads after its record, ``def ca_view(record, *, cas)``.

``BoundApi`` binds every operation's handler once, when ``create_app`` builds the app;
a name nothing provides fails there, not on the first request. A generic handler whose
services are chosen where it is declared (``crud(IdentityManager)``) says so with
``Operation(uses={"manager": "identities", "view": identity_view})``: parameter name to
service name (or mapper function). Nothing else in ``controller/api`` reads the registry.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import lru_cache, partial
from typing import Any, Callable, Mapping

import controller.api.mappers as mappers_package
from controller.api.openapi import document
from controller.api.operations import Operation, RouteTable

#: every module of ``controller/api/mappers`` (a new one is found without being listed)
MAPPER_MODULES = tuple(
    importlib.import_module(f"{mappers_package.__name__}.{info.name}")
    for info in sorted(pkgutil.iter_modules(mappers_package.__path__), key=lambda info: info.name)
    if info.name != "entity"
)

#: a value to inject: a service's name or a mapper function
Source = str | Callable[..., Any]


def _collect_mappers() -> dict[str, Callable]:
    found: dict[str, Callable] = {}
    for module in MAPPER_MODULES:
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            if name in found:
                raise ValueError(f"two mappers are named {name!r}: mapper names are what handlers inject")
            found[name] = fn
    return found


#: every mapper by name
MAPPERS = _collect_mappers()


@lru_cache(maxsize=None)
def needs(fn: Callable) -> tuple[str, ...]:
    """The names ``fn`` asks for: its keyword-only parameters without a default."""
    return tuple(
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    )


class OpenApi:
    """The OpenAPI documents of one route table, built on first use."""

    def __init__(self, routes: RouteTable):
        self._routes, self._documents = routes, {}

    def document(self, api: str) -> dict:
        if api not in self._documents:
            self._documents[api] = document(self._routes, api)
        return self._documents[api]


class Wiring:
    """Resolves injected names against one set of services, binding each mapper once."""

    def __init__(self, services: Mapping[str, Any]):
        self._services = services
        self._bound: dict[Callable, Callable] = {}

    def resolve(self, source: Source) -> Any:
        if not isinstance(source, str):
            return self.bind(source)
        if source in self._services:
            return self._services[source]
        if source in MAPPERS:
            return self.bind(MAPPERS[source])
        raise LookupError(f"nothing provides {source!r}: name a controller service, an API service or a mapper")

    def bind(self, fn: Callable, uses: Mapping[str, Source] | None = None) -> Callable:
        """``fn`` with its named services filled in (``uses``: explicit parameter -> source)."""
        if uses is None:
            if fn in self._bound:
                return self._bound[fn]
            uses = {name: name for name in needs(fn)}
            bound = partial(fn, **{param: self.resolve(src) for param, src in uses.items()}) if uses else fn
            self._bound[fn] = bound
            return bound
        return partial(fn, **{param: self.resolve(src) for param, src in uses.items()})


class BoundApi:
    """One app's operations, each handler bound to the services it names."""

    def __init__(self, routes: RouteTable, services: Mapping[str, Any]):
        self.routes = routes
        self.openapi = OpenApi(routes)
        self.handlers: dict[Operation, Callable] = {}
        self.wiring = Wiring({**services, "routes": routes, "openapi": self.openapi, "handlers": self.handlers})
        for op in routes:
            self.handlers[op] = self.wiring.bind(op.handler, op.uses)
        #: what ``dispatch`` checks every request's credentials with
        self.session_tokens = services["session_tokens"]

    def resolve(self, name: str) -> Any:
        return self.wiring.resolve(name)
