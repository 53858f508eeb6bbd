"""Notebook helpers: an in-process playground, the policy explorer and the event timeline widgets.

Notebooks stay thin: they import this, build a network and explore. The logic
lives in plain classes (:class:`Playground`, :class:`ExplorerState`,
:func:`run_virtual_clients`) and the pictures in :mod:`harness.analysis.plots`; the
ipywidgets classes (:class:`PolicyExplorer`, :class:`TimelineView`) only wire
controls to them, so tests drive them headless by setting widget values.
Needs the ``notebooks`` extra (ipywidgets, matplotlib, networkx, pandas).
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.analysis import DIAL, AccessDiff, Analysis, access_diff, apply_change
from harness.analysis.explain import Explanation
from harness.analysis.paths import DialPaths, dial_paths
from harness.analysis.plots import access_heatmap, draw_policy_graph, explorer_figure, policy_graph
from harness.analysis.static_view import StaticView, controls_html
from harness.analysis.timeline import event_rows, identity_of, plot_timeline, timeline_frame
from harness.network import Network

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "networks"
START = "2025-06-01T12:00:00Z"


def _poll(predicate: Callable[[], bool], timeout: float, failure: str) -> None:
    """Until ``predicate()`` (real sockets: routers linking), at most ``timeout`` seconds."""
    import time

    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError(f"{failure} after {timeout:g} s")
        time.sleep(0.02)


def sample_network(name: str = "company") -> Path:
    """The path of a sample network shipped in ``fixtures/networks`` (``demo`` or ``company``)."""
    path = FIXTURES / f"{name}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"no sample network {name!r} in {FIXTURES}")
    return path


# -- an in-process controller ------------------------------------------------------------------
@dataclass
class Playground:
    """A controller in this process (:class:`~controller.embedded.EmbeddedController`: its ``app``, ``clock``,
    ``events``...), a logged-in admin client."""

    controller: Any
    admin: Any
    #: in-process edge routers by name (:meth:`start_routers`)
    routers: dict = field(default_factory=dict)

    @classmethod
    def start(cls, network: Network | dict | str | Path | None = None, *, now: str = START) -> "Playground":
        """Start a controller on in-memory storage; apply ``network`` if given.

        Args:
            network: a Network, dict, YAML text or file path (see ``harness.network.apply``).
            now: the frozen clock's start (advance it with ``playground.clock.advance``).

        Returns:
            The playground; ``close()`` it when done.
        """
        from controller.clock import FrozenClock
        from controller.embedded import EmbeddedController
        from harness.client import ZitiClient
        from harness.network import apply

        controller = EmbeddedController(clock=FrozenClock(now))
        admin = ZitiClient.in_process(controller.app)
        admin.login("admin", "admin")
        if network is not None:
            apply(admin, network)
        return cls(controller, admin)

    @property
    def app(self):
        """The controller's WSGI app (in-process clients call it)."""
        return self.controller.app

    @property
    def clock(self):
        """The frozen clock: ``advance(minutes=...)`` instead of waiting."""
        return self.controller.clock

    def client(self, peer_certs=None):
        """A new anonymous in-process client (optionally presenting a certificate chain)."""
        from harness.client import ZitiClient

        return ZitiClient.in_process(self.app, peer_certs=peer_certs)

    def login(self, username: str, password: str, api: str = "client"):
        """A new client logged in by password."""
        client = self.client()
        client.login(username, password, api=api)
        return client

    def report_posture(
        self, client, *, domain: str | None = None, os: tuple[str, str] | None = None, mac: list[str] | None = None
    ) -> None:
        """Post posture responses as an SDK would, from a logged-in client: domain, (OS type, version), MACs."""
        check_id = next((c["id"] for c in self.admin.management.iterate("listPostureChecks")), "none")
        responses = []
        if domain is not None:
            responses.append({"id": check_id, "typeId": "DOMAIN", "domain": domain})
        if os is not None:
            responses.append({"id": check_id, "typeId": "OS", "type": os[0], "version": os[1]})
        if mac is not None:
            responses.append({"id": check_id, "typeId": "MAC", "macAddresses": list(mac)})
        client.edge.create_posture_response_bulk(body=responses)

    def analysis(self, posture: bool | None = None) -> Analysis:
        return Analysis.from_controller(self.admin, posture=posture)

    def names(self) -> dict[str, str]:
        """Entity id -> name for identities, services, routers and policies (for event tables)."""
        out = {}
        for op in ("listIdentities", "listServices", "listEdgeRouters", "listServicePolicies"):
            out.update({r["id"]: r["name"] for r in self.admin.management.iterate(op, page_size=500)})
        return out

    # -- routers and links, in this process ---------------------------------------------------------
    def start_routers(self, *names: str, timeout: float = 20.0) -> list[str]:
        """Run edge routers ``names`` in this process (created unless the network has them), each linked to
        the others; return once ``/fabric/v1/links`` shows every pair linked. They listen on 127.0.0.1.
        """
        from harness.client.filters import name_is
        from router import EdgeRouter

        for name in names:
            if name in self.routers:
                continue
            if not list(self.admin.management.iterate("listEdgeRouters", filter=name_is(name))):
                self.admin.management.create_edge_router(body={"name": name})
            self.routers[name] = EdgeRouter(self.controller.router_link(name), "127.0.0.1", 0).start()
        wanted = {frozenset((a, b)) for a in self.routers for b in self.routers if a != b}
        _poll(lambda: wanted <= self._linked(), timeout, f"routers {', '.join(self.routers)} are not all linked")
        return list(self.routers)

    def _linked(self) -> set:
        return {
            frozenset((link["sourceRouter"]["name"], link["destRouter"]["name"]))
            for link in self.admin.fabric.iterate("listLinks", page_size=500)
            if not link.get("down")
        }

    def host(self, service: str, router: str, *, cost: int = 0, precedence: str = "default") -> str:
        """A terminator of ``service`` on ``router`` created over the API, where a binder's router would put one.

        A stand-in for path analysis: no host serves it, so a real dial that picks it fails.
        """
        from harness.client.filters import name_is

        service_id = next(self.admin.management.iterate("listServices", filter=name_is(service)))["id"]
        router_id = next(self.admin.management.iterate("listEdgeRouters", filter=name_is(router)))["id"]
        body = {"service": service_id, "router": router_id, "binding": "edge", "address": f"hosted:{service}"}
        return self.admin.management.create_terminator(body={**body, "cost": cost, "precedence": precedence})["id"]

    def set_link(self, a: str, b: str, **body) -> None:
        """PATCH the links between routers ``a`` and ``b``: ``down=True`` cuts them, ``staticCost=n`` slows them."""
        pair = frozenset((a, b))
        links = [
            link
            for link in self.admin.fabric.iterate("listLinks", page_size=500)
            if frozenset((link["sourceRouter"]["name"], link["destRouter"]["name"])) == pair
        ]
        if not links:
            raise LookupError(f"routers {a} and {b} are not linked")
        for link in links:
            self.admin.fabric.patch_link(link["id"], body=body)

    def dial_paths(self, identity: str, service: str) -> DialPaths:
        """Which routers and links a dial of ``service`` by ``identity`` would use (:func:`harness.analysis.paths.dial_paths`)."""
        return dial_paths(self.admin, identity, service)

    def close(self) -> None:
        for router in self.routers.values():
            router.stop()
        self.routers.clear()
        self.admin.close()
        self.controller.close()


# -- the policy explorer ---------------------------------------------------------------------
class ExplorerState:
    """The explorer's model: a base network, edits on top, disabled policies and the chosen pair."""

    POLICY_KINDS = ("servicePolicies", "edgeRouterPolicies", "serviceEdgeRouterPolicies")

    def __init__(self, network: Network | dict | str | Path, posture: dict | None = None):
        if isinstance(network, (str, Path)):
            network = Network.from_yaml(network)
        self.base = network.to_dict() if isinstance(network, Network) else Network.from_dict(network).to_dict()
        self.posture = posture
        self.edits: dict = {}
        self.disabled: set[str] = set()
        self._base_analysis = Analysis(self.base, posture=posture)
        self._analysis: Analysis | None = None
        self.identity = self.identities[0] if self.identities else None
        self.service = self.services[0] if self.services else None
        self.type = DIAL

    # -- choices --------------------------------------------------------------------------
    @property
    def identities(self) -> list[str]:
        return sorted(self._base_analysis.populations["identities"].names)

    @property
    def services(self) -> list[str]:
        return sorted(self._base_analysis.populations["services"].names)

    def policies(self) -> list[tuple[str, str]]:
        """(kind, name) of every policy of the base network and of the edits."""
        names = {
            (kind, item["name"])
            for kind in self.POLICY_KINDS
            for item in [*self.base.get(kind, []), *self.edits.get(kind, [])]
        }
        return sorted(names, key=lambda pair: (self.POLICY_KINDS.index(pair[0]), pair[1]))

    def attributes(self, kind: str) -> list[str]:
        """Attributes worth toggling on ``kind``: those entities carry and those the policies ask for."""
        wires = {"identities": ("identityRoles",), "services": ("serviceRoles",)}[kind]
        network = self.network()
        found = {a for item in network.get(kind, []) for a in item.get("roleAttributes") or []}
        found |= {
            r[1:]
            for key in self.POLICY_KINDS
            for p in network.get(key, [])
            for w in wires
            for r in p.get(w) or []
            if r.startswith("#") and r != "#all"
        }
        return sorted(found)

    def attrs_of(self, kind: str, name: str) -> list[str]:
        for item in self.network().get(kind, []):
            if item["name"] == name:
                return sorted(item.get("roleAttributes") or [])
        return []

    # -- edits ----------------------------------------------------------------------------
    def network(self) -> dict:
        """The base network with the edits applied and the disabled policies left out."""
        data = apply_change(self.base, self.edits) if self.edits else Network.from_dict(self.base).to_dict()
        for kind in self.POLICY_KINDS:
            if kind in data:
                data[kind] = [p for p in data[kind] if p["name"] not in self.disabled]
        return {k: v for k, v in data.items() if v}

    def analysis(self) -> Analysis:
        if self._analysis is None:
            self._analysis = Analysis(self.network(), posture=self.posture)
        return self._analysis

    def _edit(self, change: dict) -> None:
        merged: dict[str, dict[str, dict]] = {}
        for source in (self.edits, change):
            for kind, items in source.items():
                for item in items:
                    merged.setdefault(kind, {}).setdefault(item["name"], {}).update(item)
        self.edits = {kind: list(items.values()) for kind, items in merged.items()}
        self._analysis = None

    def set_attribute(self, kind: str, name: str, attr: str, on: bool) -> None:
        """Give (``on``) or take away an attribute of identity or service ``name``."""
        attrs = set(self.attrs_of(kind, name))
        attrs = attrs | {attr} if on else attrs - {attr}
        self._edit({kind: [{"name": name, "roleAttributes": sorted(attrs)}]})

    def set_policy(self, name: str, enabled: bool) -> None:
        (self.disabled.discard if enabled else self.disabled.add)(name)
        self._analysis = None

    def apply_fix(self) -> bool:
        """Apply the current explanation's suggested fix; False when it is not a network change."""
        fix = self.explanation().fix
        if not fix:
            return False
        self._edit(fix)
        return True

    def reset(self) -> None:
        self.edits, self.disabled, self._analysis = {}, set(), None

    # -- answers ----------------------------------------------------------------------------
    def explanation(self) -> Explanation:
        return self.analysis().explain(self.identity, self.service, self.type)

    def changes(self) -> AccessDiff:
        """Who gains and loses what, from the base network to the edited one."""
        return access_diff(self._base_analysis, self.analysis())

    def controls(self) -> list[str]:
        """The state as short lines (for pictures and logs)."""
        lines = [
            f"identity {self.identity} [{', '.join(self.attrs_of('identities', self.identity))}]",
            f"service  {self.service} [{', '.join(self.attrs_of('services', self.service))}]",
            f"type     {self.type}",
        ]
        if self.disabled:
            lines.append(f"disabled policies: {', '.join(sorted(self.disabled))}")
        edited = [f"{k}/{i['name']}" for k, items in self.edits.items() for i in items]
        if edited:
            lines.append(f"edited: {', '.join(edited)}")
        return lines


def explanation_html(ex: Explanation, headline: bool = True) -> str:
    """An explanation as HTML: the verdict line (unless ``headline`` is False), then the details."""
    colour = "#2e7d32" if ex.can_connect else "#c62828"
    lines = "\n".join(html.escape(line) for line in ex.lines()[1:])
    verdict = f"<div style='font-weight:bold;color:{colour};font-size:1.1em'>{html.escape(ex.headline())}</div>"
    return f"{verdict if headline else ''}<pre style='font-size:0.85em;line-height:1.3;margin-top:2px'>{lines}</pre>"


def changes_html(diff: AccessDiff) -> str:
    items = "".join(f"<li>{html.escape(line)}</li>" for line in diff.lines())
    return f"<b>changes from the loaded network</b><ul style='margin-top:2px'>{items}</ul>"


POLICY_LABELS = {"servicePolicies": "SP", "edgeRouterPolicies": "ERP", "serviceEdgeRouterPolicies": "SERP"}


def _box(w, description: str, value: bool = False):
    """A compact checkbox (the explorer lists many)."""
    return w.Checkbox(value=value, description=description, indent=False, layout=w.Layout(height="22px", width="auto"))


class PolicyExplorer(StaticView):
    """Pick an identity and a service; toggle attributes and policies; access and explanation follow.

    Display it as the last expression of a cell. ``state`` holds the model;
    the widgets (``identity``, ``service``, ``type``, ``identity_attrs``,
    ``service_attrs``, ``policy_boxes``, ``fix_button``, ``reset_button``,
    ``verdict``, ``explanation``, ``changes``) are public so tests can set values.
    """

    def __init__(self, network: Network | dict | str | Path, posture: dict | None = None):
        import ipywidgets as w

        self.state = ExplorerState(network, posture)
        self._quiet = False
        self.identity = w.Dropdown(options=self.state.identities, value=self.state.identity, description="identity")
        self.service = w.Dropdown(options=self.state.services, value=self.state.service, description="service")
        self.type = w.ToggleButtons(
            options=["Dial", "Bind"], value=self.state.type, style=w.ToggleButtonsStyle(button_width="70px")
        )
        self.identity_attrs = {a: _box(w, a) for a in self.state.attributes("identities")}
        self.service_attrs = {a: _box(w, a) for a in self.state.attributes("services")}
        self.policy_boxes = {
            name: _box(w, f"{name} ({POLICY_LABELS[kind]})", value=True) for kind, name in self.state.policies()
        }
        self.fix_button = w.Button(description="apply suggested fix", icon="wrench", layout=w.Layout(width="190px"))
        self.reset_button = w.Button(description="reset", icon="undo")
        self.verdict, self.explanation, self.changes = w.HTML(), w.HTML(), w.HTML()
        self._wire()
        self.widget = self._layout(w)
        self._attach_static(w)
        self.refresh()

    @classmethod
    def from_analysis(cls, analysis: Analysis) -> "PolicyExplorer":
        """An explorer over an analysis's network and posture data (e.g. ``Analysis.from_controller``)."""
        return cls(analysis.network, posture=analysis.posture_data)

    def _wire(self) -> None:
        for control in (self.identity, self.service, self.type):
            control.observe(self._on_pick, names="value")
        for kind, boxes in (("identities", self.identity_attrs), ("services", self.service_attrs)):
            for attr, box in boxes.items():
                box.observe(self._attribute_handler(kind, attr), names="value")
        for name, box in self.policy_boxes.items():
            box.observe(self._policy_handler(name), names="value")
        self.fix_button.on_click(self._on_fix)
        self.reset_button.on_click(self._on_reset)

    def _layout(self, w):
        column = w.Layout(width="33%")
        attrs = w.HBox(
            [
                w.VBox([w.HTML("<b>identity attributes</b>"), *self.identity_attrs.values()], layout=column),
                w.VBox([w.HTML("<b>service attributes</b>"), *self.service_attrs.values()], layout=column),
                w.VBox(
                    [
                        w.HTML(
                            "<b>policies</b> (untick to disable; SP service, ERP edge router, SERP service edge router)"
                        ),
                        *self.policy_boxes.values(),
                    ],
                    layout=column,
                ),
            ]
        )
        return w.VBox(
            [
                w.HBox([self.identity, self.service, self.type]),
                self.verdict,
                attrs,
                w.HBox([self.fix_button, self.reset_button]),
                self.explanation,
                self.changes,
            ]
        )

    # -- callbacks -----------------------------------------------------------------------------
    def _on_pick(self, _change=None) -> None:
        if self._quiet:
            return
        self.state.identity, self.state.service, self.state.type = (
            self.identity.value,
            self.service.value,
            self.type.value,
        )
        self.refresh()

    def _attribute_handler(self, kind: str, attr: str) -> Callable:
        def handler(change) -> None:
            if self._quiet:
                return
            name = self.state.identity if kind == "identities" else self.state.service
            self.state.set_attribute(kind, name, attr, bool(change["new"]))
            self.refresh()

        return handler

    def _policy_handler(self, name: str) -> Callable:
        def handler(change) -> None:
            if not self._quiet:
                self.state.set_policy(name, bool(change["new"]))
                self.refresh()

        return handler

    def _on_fix(self, _button=None) -> None:
        self.state.apply_fix()
        self._add_policy_boxes()
        self.refresh()

    def _on_reset(self, _button=None) -> None:
        self.state.reset()
        self.refresh()

    def _add_policy_boxes(self) -> None:
        import ipywidgets as w

        for kind, name in self.state.policies():
            if name not in self.policy_boxes:
                box = _box(w, f"{name} ({POLICY_LABELS[kind]}, new)", value=True)
                box.observe(self._policy_handler(name), names="value")
                self.policy_boxes[name] = box
                self.widget.children[2].children[2].children += (box,)

    def refresh(self) -> None:
        """Bring every control and output in line with the state."""
        state = self.state
        self._quiet = True
        try:
            held_ids = set(state.attrs_of("identities", state.identity))
            held_svcs = set(state.attrs_of("services", state.service))
            for attr, box in self.identity_attrs.items():
                box.value = attr in held_ids
            for attr, box in self.service_attrs.items():
                box.value = attr in held_svcs
            for name, box in self.policy_boxes.items():
                box.value = name not in state.disabled
        finally:
            self._quiet = False
        ex = state.explanation()
        self.fix_button.disabled = not ex.fix
        self.verdict.value = (
            f"<span style='font-size:1.2em;color:{'#2e7d32' if ex.can_connect else '#c62828'}'>"
            f"{'✔' if ex.can_connect else '✘'} {html.escape(ex.headline())}</span>"
        )
        self.explanation.value = explanation_html(ex, headline=False)  # the verdict widget shows it
        self.changes.value = changes_html(state.changes())
        self._update_static()

    def figure(self):
        """The current state as a matplotlib figure (controls, explanation and heatmap)."""
        return explorer_figure(self.state.analysis(), self.state.explanation(), controls=self.state.controls())

    def static_html(self) -> str:
        """The explorer's state without widgets: choices, verdict, explanation and changes."""
        return f"<div>{controls_html(self.state.controls())}{self.verdict.value}{self.explanation.value}{self.changes.value}</div>"


# -- the matrix, interactively -----------------------------------------------------------------
class MatrixView(StaticView):
    """The access heatmap, narrowed by an identity attribute and a service attribute."""

    ANY = "(any)"

    def __init__(self, analysis: Analysis):
        import ipywidgets as w

        self.analysis = analysis
        id_attrs = sorted({a for attrs in analysis.populations["identities"].attrs for a in attrs})
        svc_attrs = sorted({a for attrs in analysis.populations["services"].attrs for a in attrs})
        self.identity_attr = w.Dropdown(options=[self.ANY, *id_attrs], description="identities")
        self.service_attr = w.Dropdown(options=[self.ANY, *svc_attrs], description="services")
        self.output = w.Output()
        self.summary = w.HTML()
        for control in (self.identity_attr, self.service_attr):
            control.observe(lambda _change: self.refresh(), names="value")
        self.widget = w.VBox([w.HBox([self.identity_attr, self.service_attr]), self.summary, self.output])
        self._attach_static(w)
        self.refresh()

    def selection(self) -> tuple[list[str], list[str]]:
        """The identities and services carrying the chosen attributes."""

        def pick(key: str, attr: str) -> list[str]:
            pop = self.analysis.populations[key]
            return sorted(n for n, attrs in zip(pop.names, pop.attrs) if attr == self.ANY or attr in attrs)

        return pick("identities", self.identity_attr.value), pick("services", self.service_attr.value)

    def refresh(self) -> None:
        identities, services = self.selection()
        counts = self.analysis.matrix(identities, services).counts()
        self.summary.value = (
            f"{counts['identities']} identities x {counts['services']} services: "
            f"{counts['dial']} dial, {counts['bind']} bind, {counts['usable']} usable"
        )
        self.figure = access_heatmap(self.analysis, identities, services)
        _show(self.output, self.figure)
        self._update_static()

    def static_html(self) -> str:
        choice = [f"identities {self.identity_attr.value}", f"services   {self.service_attr.value}"]
        return f"<div>{controls_html(choice)}{self.summary.value}<br/>{self.figure.to_html()}</div>"


# -- virtual clients and their events ----------------------------------------------------------
@dataclass
class ScenarioResult:
    """What :func:`run_virtual_clients` saw: the clients' observations and the controller's events."""

    observations: list
    events: list[dict]
    names: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict]:
        return event_rows(self.events, self.names)

    def frame(self):
        return timeline_frame(self.events, self.names)

    def summary(self) -> list[dict]:
        return [
            {
                "client": o.name,
                "requests": o.requests,
                "sessions": o.sessions,
                "services": sorted(o.services),
                "service refreshes": o.service_refreshes,
                "errors": len(o.errors),
            }
            for o in self.observations
        ]


def run_virtual_clients(
    playground: Playground,
    credentials: Iterable[tuple[str, str, str]],
    *,
    rounds: int = 6,
    tick_seconds: float = 60,
    dial_probability: float = 0.6,
    seed: int = 1,
    changes: dict[int, Callable[[Playground], Any]] | None = None,
) -> ScenarioResult:
    """Run SDK-like virtual clients round by round on the playground's frozen clock.

    Args:
        playground: the in-process controller.
        credentials: ``(name, username, password)`` per client.
        rounds: refresh-and-maybe-dial steps per client.
        tick_seconds: how far the clock moves after each round.
        dial_probability: chance that a client dials a service in a round.
        seed: makes the dials reproducible.
        changes: round number -> function run before that round (edit the network, advance the clock...).

    Returns:
        The observations of every client and the events the controller emitted meanwhile.
    """
    from harness.client.transport import inprocess
    from harness.dataplane.virtual import VirtualClient

    events: list[dict] = []
    unsubscribe = playground.controller.events.subscribe(events.append)
    clients = [
        VirtualClient(
            inprocess(playground.app),
            name,
            username=username,
            password=password,
            dial_probability=dial_probability,
            rng=random.Random(seed + n),
        )
        for n, (name, username, password) in enumerate(credentials)
    ]
    try:
        active = [c for c in clients if c.start()]
        playground.clock.advance(seconds=tick_seconds)
        for round_number in range(1, rounds + 1):
            if changes and round_number in changes:
                changes[round_number](playground)
            for client in active:
                client.step()
            playground.clock.advance(seconds=tick_seconds)
    finally:
        unsubscribe()
        for client in clients:
            client.http.close()
    return ScenarioResult([c.seen for c in clients], events, playground.names())


class TimelineView(StaticView):
    """The events of a scenario, filtered by namespace and identity, as a plot and a table."""

    ALL = "(all)"

    def __init__(self, result: ScenarioResult):
        import ipywidgets as w

        self.result = result
        rows = result.rows()
        namespaces = sorted({r["namespace"] for r in rows})
        identities = sorted({r["identity"] for r in rows if r["identity"]})
        self.namespaces = w.SelectMultiple(
            options=namespaces,
            value=tuple(n for n in namespaces if n != "entityChange"),
            description="namespaces",
            rows=min(len(namespaces), 8),
        )
        self.identity = w.Dropdown(options=[self.ALL, *identities], description="identity")
        self.table, self.output = w.HTML(), w.Output()
        for control in (self.namespaces, self.identity):
            control.observe(lambda _change: self.refresh(), names="value")
        self.widget = w.VBox([w.HBox([self.namespaces, self.identity]), self.output, self.table])
        self._attach_static(w)
        self.refresh()

    def selected(self) -> list[dict]:
        """The events kept by the filters."""
        return filter_events(
            self.result.events,
            self.result.names,
            self.namespaces.value,
            None if self.identity.value == self.ALL else self.identity.value,
        )

    def refresh(self) -> None:
        events = self.selected()
        self.figure = plot_timeline(events, self.result.names, changes=self.result.events)
        rows = event_rows(events, self.result.names)[-12:]
        cells = "".join(
            f"<tr><td>{r['time']}</td><td>{r['namespace']}</td><td>{r['type']}</td>"
            f"<td>{html.escape(r['entity'])}</td><td>{html.escape(r['identity'])}</td>"
            f"<td>{html.escape(r['path'])}</td></tr>"
            for r in rows
        )
        self.table.value = (
            f"<b>{len(events)} events</b> (latest {len(rows)})<table><tr><th>time</th><th>namespace</th>"
            f"<th>type</th><th>entity</th><th>identity</th><th>path</th></tr>{cells}</table>"
        )
        _show(self.output, self.figure)
        self._update_static()

    def static_html(self) -> str:
        choice = [f"namespaces {', '.join(self.namespaces.value)}", f"identity   {self.identity.value}"]
        return f"<div>{controls_html(choice)}{self.figure.to_html()}{self.table.value}</div>"


def _show(output, figure) -> None:
    """Show ``figure`` in an Output widget, when a kernel is there to render it."""
    from IPython import get_ipython
    from IPython.display import display

    if get_ipython() is not None:
        output.clear_output(wait=True)
        with output:
            display(figure)


def filter_events(
    events: Iterable[dict], names: dict[str, str], namespaces: Iterable[str] | None = None, identity: str | None = None
) -> list[dict]:
    """Events in ``namespaces`` (all when None) concerning ``identity`` (by name; all when None)."""
    wanted = set(namespaces) if namespaces is not None else None
    out = []
    for event in events:
        if wanted is not None and event["namespace"] not in wanted:
            continue
        if identity is not None and identity not in (names.get(identity_of(event)), names.get(event.get("entityId"))):
            continue
        out.append(event)
    return out


__all__ = [
    "ExplorerState",
    "MatrixView",
    "Playground",
    "PolicyExplorer",
    "ScenarioResult",
    "StaticView",
    "TimelineView",
    "access_heatmap",
    "changes_html",
    "draw_policy_graph",
    "event_rows",
    "explanation_html",
    "explorer_figure",
    "filter_events",
    "plot_timeline",
    "policy_graph",
    "run_virtual_clients",
    "sample_network",
    "timeline_frame",
]
