"""Fixture factories: build your own ``make_*`` fixtures, as pytest-postgresql's ``factories`` do.

The plugin's own factories are made here (``ziti_make_identity = identity_factory()``);
a project that wants another client or another return value declares its own in
its ``conftest.py`` instead of shadowing the plugin's with a different type:

.. code-block:: python

    from harness.testing.fixtures import identity_factory

    make_identity = identity_factory(returns="id")  # ids instead of details
    make_operator = identity_factory(client="operator_client")

Every factory accepts ``@name`` in role lists (``["@device-1", "#sales"]``): the
name is looked up and sent as ``@<id>``, as a network file does.
"""

from __future__ import annotations

import pytest

#: role list field -> the listing that resolves its ``@name`` entries
ROLE_LISTS = {
    "identityRoles": "listIdentities",
    "serviceRoles": "listServices",
    "edgeRouterRoles": "listEdgeRouters",
    "postureCheckRoles": "listPostureChecks",
}


def resolve_roles(client, body: dict) -> dict:
    """``body`` with each ``@name`` of its role lists replaced by ``@<id>`` (ids stay as they are)."""
    out = dict(body)
    for field, list_op in ROLE_LISTS.items():
        if out.get(field):
            out[field] = [_role_id(client, list_op, role) for role in out[field]]
    return out


def _role_id(client, list_op: str, role: str) -> str:
    if not role.startswith("@"):
        return role
    from harness.client.filters import name_is

    found = list(client.management.iterate(list_op, filter=name_is(role[1:])))
    return f"@{found[0]['id']}" if found else role  # not a name: an id already


def _check_returns(returns: str) -> None:
    if returns not in ("detail", "id"):
        raise ValueError(f"returns must be 'detail' or 'id', not {returns!r}")


def _fixture(client: str, build, doc: str):
    """A pytest fixture that depends on ``ziti_unique`` and the fixture named ``client``.

    NOTE(cli): the dependency is declared in the signature (not fetched with
    ``getfixturevalue``) so pytest sees it while collecting: ``ziti_mode`` is
    then parametrized for every test that uses a factory.
    """
    import inspect

    def factory(**fixtures):
        return build(fixtures[client], fixtures["ziti_unique"], fixtures["ziti_cleanup"].add)

    # NOTE(cli): ziti_cleanup comes after the client, so it is torn down (deleting) before the client closes
    names = dict.fromkeys(["ziti_unique", client, "ziti_cleanup"])
    factory.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names])
    factory.__doc__ = doc  # what ``pytest --fixtures`` shows: the ``make`` the fixture yields
    return pytest.fixture(factory)


IDENTITY_DOC = """Create identities: make(name=None, *, attrs=None, password=None).

    In full: ``make(name=None, *, password=None, username=None, attrs=None, is_admin=False, **fields)``.

    Args:
        name: the identity's name (default a unique one for this test).
        password: also create a ``updb`` authenticator with this password.
        username: the authenticator's username (default the name).
        attrs: role attributes (``roleAttributes``), e.g. ``["sales"]`` for ``#sales``.
        is_admin: whether the identity is an admin (default False).
        **fields: any other field of the create body, in the API's camelCase.

    Returns:
        The identity's detail (or its id, for a factory made with ``returns="id"``).
    """

SERVICE_DOC = """Create services: make(name=None, *, attrs=(), configs=(), **fields).

    Args:
        name: the service's name (default a unique one for this test).
        attrs: role attributes (``roleAttributes``), e.g. ``["web"]`` for ``#web``.
        configs: ids of the configs to attach.
        **fields: any other field of the create body, in the API's camelCase.

    Returns:
        The service's detail (or its id, for a factory made with ``returns="id"``).
    """

SERVICE_POLICY_DOC = """Create service policies: make(identity_roles, service_roles, *, type).

    In full: ``make(identity_roles=("#all",), service_roles=("#all",), *, type="Dial", name=None, **fields)``.

    Args:
        identity_roles: ``#attribute``, ``@name`` or ``@id`` roles of the identities (default ``#all``).
        service_roles: the same for services (default ``#all``).
        type: ``"Dial"`` (default) or ``"Bind"``.
        name: the policy's name (default a unique one for this test).
        **fields: any other field of the create body (e.g. ``semantic="AllOf"``), in the API's camelCase.

    Returns:
        The policy's detail (or its id, for a factory made with ``returns="id"``).
    """


def identity_factory(client: str = "ziti_admin", *, returns: str = "detail"):
    """A fixture: ``make(name=None, *, password=None, username=None, attrs=None, is_admin=False, **fields)``.

    Args:
        client: the name of the logged-in admin ``ZitiClient`` fixture to create with.
        returns: ``"detail"`` (the identity's detail) or ``"id"``.
    """
    _check_returns(returns)

    def build(admin, ziti_unique, cleanup):
        def make(name=None, *, password=None, username=None, attrs=None, is_admin=False, **fields):
            body = {"name": name or ziti_unique("identity"), "type": "User", "isAdmin": is_admin, **fields}
            if attrs is not None:
                body["roleAttributes"] = list(attrs)
            created = admin.management.create_identity(body=body)
            cleanup("deleteIdentity", created["id"])
            if password:
                admin.management.create_authenticator(
                    body={
                        "identityId": created["id"],
                        "method": "updb",
                        "username": username or body["name"],
                        "password": password,
                    }
                )
            return created["id"] if returns == "id" else admin.management.detail_identity(created["id"])

        return make

    return _fixture(client, build, IDENTITY_DOC)


def service_factory(client: str = "ziti_admin", *, returns: str = "detail"):
    """A fixture: ``make(name=None, *, attrs=(), configs=(), **fields)`` creating a service."""
    _check_returns(returns)

    def build(admin, ziti_unique, cleanup):
        def make(name=None, *, attrs=(), configs=(), **fields):
            body = {
                "name": name or ziti_unique("service"),
                "encryptionRequired": True,
                "roleAttributes": list(attrs),
                "configs": list(configs),
                **fields,
            }
            created = admin.management.create_service(body=body)
            cleanup("deleteService", created["id"])
            return created["id"] if returns == "id" else admin.management.detail_service(created["id"])

        return make

    return _fixture(client, build, SERVICE_DOC)


def service_policy_factory(client: str = "ziti_admin", *, returns: str = "detail"):
    """A fixture: ``make(identity_roles=("#all",), service_roles=("#all",), *, type="Dial", name=None, **fields)``."""
    _check_returns(returns)

    def build(admin, ziti_unique, cleanup):
        def make(identity_roles=("#all",), service_roles=("#all",), *, type="Dial", name=None, **fields):
            body = resolve_roles(
                admin,
                {
                    "name": name or ziti_unique("sp"),
                    "type": type,
                    "semantic": "AnyOf",
                    "identityRoles": list(identity_roles),
                    "serviceRoles": list(service_roles),
                    **fields,
                },
            )
            created = admin.management.create_service_policy(body=body)
            cleanup("deleteServicePolicy", created["id"])
            return created["id"] if returns == "id" else admin.management.detail_service_policy(created["id"])

        return make

    return _fixture(client, build, SERVICE_POLICY_DOC)


__all__ = ["identity_factory", "resolve_roles", "service_factory", "service_policy_factory"]
