"""Which routers and links a dial would use: identity X, service Y, over a live controller's APIs.

:func:`dial_paths` answers, for one identity and one service, with what the controller itself says:

* the routers X may use and the edge router policies giving each (``/identities/{id}/edge-router-policies``,
  ``/edge-router-policies/{id}/edge-routers``), the routers Y may use and the service edge router policies
  giving each, which are online, and whether a Dial policy grants X the service (``policy-advice``);
* where Y is hosted: its terminators (router, cost, precedence) and its ``terminatorStrategy``;
* for every router X could dial in through (a router both may use), each terminator's path as the
  controller would route it (``GET /fabric/v1/routers/{id}/paths/{serviceId}``: the same
  ``controller/fabric/routing.py`` code a dial runs, read-only), with the links' costs and latencies and the
  chance the strategy picks it; or why none can be reached (router offline, no live link, no terminator).

It works with any admin client: ``ZitiClient.connect(url)`` against a running controller or
``ZitiClient.in_process(app)`` in a notebook. Results are plain objects; ``frame()`` gives a pandas table
and :func:`harness.analysis.plots.draw_dial_paths` a picture of the routers and links with the path drawn.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from harness.client.filters import name_is


@dataclass
class Hop:
    """One link a path crosses, in the direction of the dial."""

    link: str
    source: str  # router names
    target: str
    cost: int  # what path selection adds: static cost plus the measured round trip in ms
    static_cost: int
    latency_ms: float


@dataclass
class Route:
    """One terminator as seen from one entry router: its path, or why a dial cannot use it."""

    entry: str
    terminator: str
    router: str  # where the terminator is (its router's name)
    cost: int
    precedence: str
    usable: bool
    reason: str
    chance: float  # the probability the service's strategy picks it (0 when not usable or outranked)
    path: list[str] = field(default_factory=list)  # router names, the entry router first
    hops: list[Hop] = field(default_factory=list)
    path_cost: int | None = None
    total_cost: int | None = None

    def path_text(self) -> str:
        return " > ".join(self.path) if self.path else "-"


@dataclass
class Entry:
    """One router the identity could dial in through (one both it and the service may use)."""

    router: str
    id: str
    online: bool
    reachable: bool
    reason: str
    routes: list[Route]

    @property
    def likely(self) -> Route | None:
        """The route the strategy most likely picks (None when no terminator can be reached)."""
        best = max(self.routes, key=lambda r: (r.chance, -(r.total_cost or 0)), default=None)
        return best if best is not None and best.chance > 0 else None


@dataclass
class DialPaths:
    """Which routers and links a dial of ``service`` by ``identity`` would use, and why (not)."""

    identity: str
    service: str
    dial_allowed: bool
    strategy: str
    identity_routers: dict[str, list[str]]  # router -> the edge router policies giving it to the identity
    service_routers: dict[str, list[str]]  # router -> the service edge router policies giving it to the service
    online: dict[str, bool]  # every router named here -> online
    common: list[str]  # routers both may use: where a dial can enter
    terminators: list[dict]  # {id, router, cost, precedence, binding}
    entries: list[Entry]
    links: list[dict]  # every link: {id, source, target, cost, staticCost, latencyMs, down}
    reason: str  # "" when a dial has a path

    @property
    def has_path(self) -> bool:
        """A Dial policy grants it and some online entry router reaches a terminator."""
        return not self.reason

    @property
    def likely(self) -> Route | None:
        """The likeliest route through the first entry router that has one."""
        return next((entry.likely for entry in self.entries if entry.likely), None)

    def headline(self) -> str:
        if self.has_path:
            route = self.likely
            return (
                f"{self.identity} CAN dial {self.service}: e.g. in at {route.entry}, "
                f"{route.path_text()} to terminator {route.terminator} (cost {route.total_cost})"
            )
        return f"{self.identity} CANNOT dial {self.service}: {self.reason}"

    def lines(self) -> list[str]:
        out = [self.headline()]
        out.append(f"  identity routers: {_policies_text(self.identity_routers, self.online)}")
        out.append(f"  service routers: {_policies_text(self.service_routers, self.online)}")
        out.append(f"  entry routers: {', '.join(_online_text(r, self.online) for r in self.common) or 'none'}")
        hosted = [f"{t['id']} on {t['router']} (cost {t['cost']}, {t['precedence']})" for t in self.terminators]
        out.append(f"  terminators ({self.strategy}): {', '.join(hosted) or 'none'}")
        for entry in self.entries:
            out.append(f"  from {entry.router}: {'' if entry.reachable else entry.reason}".rstrip())
            for route in entry.routes:
                if route.usable:
                    hops = ", ".join(f"{h.source}-{h.target} cost {h.cost} ({h.latency_ms:.2f} ms)" for h in route.hops)
                    out.append(
                        f"    {route.path_text()} -> {route.terminator}: total {route.total_cost}, "
                        f"chance {route.chance:.0%}" + (f"; links {hops}" if hops else "")
                    )
                else:
                    out.append(f"    x {route.terminator} on {route.router}: {route.reason}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def rows(self) -> list[dict]:
        """One row per entry router and terminator."""
        return [
            {
                "entry router": entry.router,
                "entry online": entry.online,
                "terminator": route.terminator,
                "terminator router": route.router,
                "precedence": route.precedence,
                "terminator cost": route.cost,
                "path": route.path_text(),
                "links": ", ".join(f"{h.source}-{h.target} ({h.cost})" for h in route.hops),
                "path cost": route.path_cost,
                "total cost": route.total_cost,
                "chance": round(route.chance, 3),
                "why not": route.reason,
            }
            for entry in self.entries
            for route in entry.routes
        ]

    def frame(self):
        """:meth:`rows` as a pandas DataFrame."""
        from harness.analysis.explain import pandas

        return pandas().DataFrame(self.rows())

    def to_dict(self) -> dict:
        return asdict(self)


def _online_text(router: str, online: dict[str, bool]) -> str:
    return router if online.get(router) else f"{router} (offline)"


def _policies_text(routers: dict[str, list[str]], online: dict[str, bool]) -> str:
    if not routers:
        return "none"
    return "; ".join(f"{_online_text(r, online)} by {', '.join(p)}" for r, p in sorted(routers.items()))


# -- reading the controller ----------------------------------------------------------------------
def _find(client, list_op: str, detail_op: str, key: str, what: str) -> dict:
    """An entity by name (or id)."""
    found = list(client.management.iterate(list_op, filter=name_is(key)))
    if found:
        return found[0]
    from harness.client import ApiError

    try:
        return client.management.call(detail_op, key)
    except ApiError as ex:
        if ex.status == 404:
            raise LookupError(f"no {what} named {key!r}") from None
        raise


def _routers_by_policy(client, policies_op: str, members_op: str, owner_id: str) -> dict[str, list[str]]:
    """Router name -> the names of the policies (of ``policies_op``) giving it to the owner."""
    out: dict[str, list[str]] = {}
    for policy in client.management.iterate(policies_op, owner_id, page_size=500):
        for router in client.management.iterate(members_op, policy["id"], page_size=500):
            out.setdefault(router["name"], []).append(policy["name"])
    return {router: sorted(names) for router, names in sorted(out.items())}


def _named(text: str, names: dict[str, str]) -> str:
    """``text`` (a controller's reason) with router ids replaced by their names."""
    for router_id, name in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(f"router {router_id}", f"router {name}")
    return text


def dial_paths(client, identity: str, service: str) -> DialPaths:
    """Which routers and links a dial of ``service`` by ``identity`` would use (names or ids).

    Args:
        client: a logged-in admin ``ZitiClient`` (over HTTP or in-process).
        identity: the identity's name (or id).
        service: the service's name (or id).

    Returns:
        A :class:`DialPaths`; its ``reason`` says why no dial has a path ("" when one has).

    Raises:
        LookupError: no such identity or service.
    """
    who = _find(client, "listIdentities", "detailIdentity", identity, "identity")
    what = _find(client, "listServices", "detailService", service, "service")
    advice = client.management.get_identity_policy_advice(who["id"], what["id"])
    identity_routers = _routers_by_policy(
        client, "listIdentitysEdgeRouterPolicies", "listEdgeRouterPolicyEdgeRouters", who["id"]
    )
    service_routers = _routers_by_policy(
        client, "listServiceServiceEdgeRouterPolicies", "listServiceEdgeRouterPolicyEdgeRouters", what["id"]
    )
    fabric_routers = {r["id"]: r for r in client.fabric.iterate("listRouters", page_size=500)}
    names = {router_id: r["name"] for router_id, r in fabric_routers.items()}
    online = {r["name"]: bool(r.get("connected")) for r in fabric_routers.values()}
    strategy = client.fabric.detail_service(what["id"]).get("terminatorStrategy") or "smartrouting"
    terminators = [
        {
            "id": t["id"],
            "router": (t.get("router") or {}).get("name") or "",
            "cost": t.get("cost") or 0,
            "precedence": t.get("precedence") or "default",
            "binding": t.get("binding") or "",
        }
        for t in client.fabric.iterate("listServiceTerminators", what["id"], page_size=500)
    ]
    links = [_link(link) for link in client.fabric.iterate("listLinks", page_size=500)]
    common = sorted(advice.get("commonRouters") or [], key=lambda r: r["name"])
    entries = [_entry(client, router, what["id"], names) for router in common]
    found = DialPaths(
        identity=who["name"],
        service=what["name"],
        dial_allowed=bool(advice.get("isDialAllowed")),
        strategy=strategy,
        identity_routers=identity_routers,
        service_routers=service_routers,
        online=online,
        common=[router["name"] for router in common],
        terminators=terminators,
        entries=entries,
        links=links,
        reason="",
    )
    found.reason = _reason(found)
    return found


def _link(link: dict) -> dict:
    return {
        "id": link["id"],
        "source": link["sourceRouter"]["name"],
        "target": link["destRouter"]["name"],
        "cost": link.get("cost") or 0,
        "staticCost": link.get("staticCost") or 0,
        "latencyMs": _latency_ms(link),
        "down": bool(link.get("down")),
    }


def _latency_ms(link: dict) -> float:
    return ((link.get("sourceLatency") or 0) + (link.get("destLatency") or 0)) / 2 / 1_000_000


def _entry(client, router: dict, service_id: str, names: dict[str, str]) -> Entry:
    answer = client.fabric.get_router_service_paths(router["id"], service_id)
    details = {link["id"]: link for link in answer.get("links") or []}
    routes = []
    for t in answer["terminators"]:
        path = t.get("path") or {}
        nodes = [node["name"] for node in path.get("nodes") or []]
        hops = []
        for index, ref in enumerate(path.get("links") or []):
            link = details.get(ref["id"], {})
            hops.append(
                Hop(
                    ref["id"],
                    nodes[index],
                    nodes[index + 1],
                    link.get("cost") or 0,
                    link.get("staticCost") or 0,
                    _latency_ms(link),
                )
            )
        routes.append(
            Route(
                entry=router["name"],
                terminator=t["id"],
                router=(t.get("router") or {}).get("name") or "",
                cost=t.get("cost") or 0,
                precedence=t.get("precedence") or "default",
                usable=bool(t.get("usable")),
                reason=_named(t.get("reason") or "", names),
                chance=float(t.get("chance") or 0),
                path=nodes,
                hops=hops,
                path_cost=t.get("pathCost"),
                total_cost=t.get("totalCost"),
            )
        )
    return Entry(
        router=router["name"],
        id=router["id"],
        online=bool(answer.get("isOnline")),
        reachable=bool(answer.get("reachable")),
        reason=_named(answer.get("reason") or "", names),
        routes=routes,
    )


def _reason(found: DialPaths) -> str:
    """Why no dial has a path, the first cause in the order a dial meets them ("" when one has)."""
    who, what = found.identity, found.service
    if not found.dial_allowed:
        return f"no Dial service policy grants {who} {what}"
    if not found.identity_routers:
        return f"no router: no edge router policy gives {who} a router"
    if not found.service_routers:
        return f"no router: no service edge router policy gives {what} a router"
    if not found.common:
        return (
            f"no router: none is both {who}'s ({', '.join(found.identity_routers)}) "
            f"and {what}'s ({', '.join(found.service_routers)})"
        )
    if not any(entry.online for entry in found.entries):
        return f"no router online: every router {who} may dial {what} through is offline ({', '.join(found.common)})"
    if not found.terminators:
        return f"{what} has no terminators: nothing binds it"
    if not any(entry.reachable for entry in found.entries):
        return "no path: " + "; ".join(
            f"from {entry.router}: {entry.reason}" for entry in found.entries if entry.online
        )
    return ""


__all__ = ["DialPaths", "Entry", "Hop", "Route", "dial_paths"]
