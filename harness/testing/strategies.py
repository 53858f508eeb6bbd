"""Hypothesis strategies for valid entities, role expressions and whole networks.

Strategies are plural nouns, take ``min_size``/``max_size`` and accept
strategies rather than plain values. Networks come out in the networks-as-code
dict format, ready for :func:`harness.network.apply`.
"""

from __future__ import annotations

from hypothesis import strategies as st

ATTRIBUTE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-"


def names(prefix: str = "n", min_size: int = 1, max_size: int = 12) -> st.SearchStrategy[str]:
    """Entity names: a prefix and lowercase letters/digits."""
    return st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=min_size, max_size=max_size).map(
        lambda t: f"{prefix}-{t}"
    )


def role_attributes(
    min_size: int = 0, max_size: int = 4, elements: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[list[str]]:
    """Lists of distinct role attributes (never starting with ``#`` or ``@``)."""
    elements = elements or st.text(ATTRIBUTE_ALPHABET, min_size=1, max_size=8).filter(lambda a: a[0].isalnum())
    return st.lists(elements, min_size=min_size, max_size=max_size, unique=True)


def role_expressions(
    attributes: st.SearchStrategy[str],
    names: st.SearchStrategy[str] | None = None,
    min_size: int = 0,
    max_size: int = 3,
) -> st.SearchStrategy[list[str]]:
    """Role lists: ``#all`` alone, or ``#attr`` entries and (when names are given) ``@name`` entries."""
    entry = attributes.map(lambda a: "#" + a)
    if names is not None:
        entry = entry | names.map(lambda n: "@" + n)
    listed = st.lists(entry, min_size=min_size, max_size=max_size, unique=True)
    return st.one_of(st.just(["#all"]), listed) if max_size > 0 else listed


def identities(
    name: st.SearchStrategy[str] | None = None, attributes: st.SearchStrategy[list[str]] | None = None
) -> st.SearchStrategy[dict]:
    """Valid identity create bodies."""
    return st.fixed_dictionaries(
        {
            "name": name or names("identity"),
            "type": st.sampled_from(["User", "Device", "Service", "Default"]),
            "isAdmin": st.booleans(),
            "roleAttributes": attributes or role_attributes(),
        },
        optional={
            "externalId": st.text("abcdef0123456789", min_size=1, max_size=10),
            "defaultHostingCost": st.integers(0, 65535),
            "defaultHostingPrecedence": st.sampled_from(["default", "required", "failed"]),
            "tags": st.dictionaries(
                st.text("abcdefgh", min_size=1, max_size=5), st.none() | st.booleans() | st.text(max_size=8), max_size=3
            ),
            "appData": st.dictionaries(
                st.text("abcdefgh", min_size=1, max_size=5), st.integers() | st.text(max_size=5), max_size=3
            ),
        },
    )


@st.composite
def networks(
    draw,
    min_size: int = 1,
    max_size: int = 6,
    attributes: st.SearchStrategy[str] | None = None,
    with_routers: bool = True,
) -> dict:
    """Whole networks: identities, services, edge routers and the three policy kinds, by names."""
    attribute = attributes or st.sampled_from(["red", "green", "blue", "ops", "eu"])
    sizes = st.integers(min_size, max_size)

    def entities(prefix: str) -> list[dict]:
        count = draw(sizes)
        return [
            {"name": f"{prefix}{i}", "roleAttributes": draw(st.lists(attribute, max_size=3, unique=True))}
            for i in range(count)
        ]

    ids, svcs = entities("id"), entities("svc")
    routers = entities("er") if with_routers else []
    id_names, svc_names, er_names = (
        st.sampled_from([e["name"] for e in group]) for group in (ids, svcs, routers or [{"name": "none"}])
    )

    def roles(names_strategy) -> list[str]:
        return sorted(draw(role_expressions(attribute, names_strategy, max_size=2)))

    network = {
        "identities": ids,
        "services": svcs,
        "servicePolicies": [
            {
                "name": f"sp{i}",
                "type": draw(st.sampled_from(["Dial", "Bind"])),
                "semantic": draw(st.sampled_from(["AllOf", "AnyOf"])),
                "identityRoles": roles(id_names),
                "serviceRoles": roles(svc_names),
            }
            for i in range(draw(st.integers(0, max_size)))
        ],
    }
    if routers:
        network["edgeRouters"] = routers
        network["edgeRouterPolicies"] = [
            {
                "name": f"erp{i}",
                "semantic": draw(st.sampled_from(["AllOf", "AnyOf"])),
                "identityRoles": roles(id_names),
                "edgeRouterRoles": roles(er_names),
            }
            for i in range(draw(st.integers(0, 3)))
        ]
        network["serviceEdgeRouterPolicies"] = [
            {
                "name": f"serp{i}",
                "semantic": draw(st.sampled_from(["AllOf", "AnyOf"])),
                "serviceRoles": roles(svc_names),
                "edgeRouterRoles": roles(er_names),
            }
            for i in range(draw(st.integers(0, 3)))
        ]
    return network
