"""Pictures of an analysis: the access heatmap and the policy graph (the timeline is in harness.analysis.timeline).

Plain functions that return matplotlib figures (built with
``matplotlib.figure.Figure``, so they work headless and never touch pyplot's
global state); the widgets in :mod:`harness.notebook` call them. Needs the
``notebooks`` extra (matplotlib, networkx, pandas).
"""

from __future__ import annotations

import base64
import functools
import io
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from harness.analysis import Analysis, Explanation
    from harness.analysis.paths import DialPaths

#: heatmap cell codes (see AccessMatrix.codes: 1 dial, 2 bind, 4 shared router, 8 posture refuses)
CELL_COLOURS = ["#f4f4f4", "#b9d4ee", "#f6d3a8", "#d9c2e8", "#f4f4f4", "#2f7dc8", "#e8871e", "#7b4fa6"]
POSTURE_COLOUR = "#e06666"
LEGEND = [
    (5, "dial"),
    (6, "bind"),
    (7, "dial + bind"),
    (1, "allowed, no shared router"),
    (9, "allowed, posture fails"),
    (0, "no access"),
]


def _cell_colour(code: int) -> str:
    return POSTURE_COLOUR if code & 8 and code & 3 else CELL_COLOURS[code & 7]


LAYERS = {
    "identity": 0,
    "postureCheck": 1,
    "servicePolicy": 2,
    "edgeRouterPolicy": 2,
    "service": 3,
    "serviceEdgeRouterPolicy": 4,
    "edgeRouter": 5,
}
NODE_COLOURS = {
    "identity": "#2f7dc8",
    "service": "#e8871e",
    "edgeRouter": "#4a9d5b",
    "servicePolicy": "#9a9a9a",
    "edgeRouterPolicy": "#b5b5b5",
    "serviceEdgeRouterPolicy": "#c9c9c9",
    "postureCheck": "#a77bca",
}
VERDICT_COLOURS = {True: "#2e7d32", False: "#c62828", None: "#9a9a9a"}


@functools.cache
def _picture_class() -> type:
    # NOTE(perf): matplotlib (with numpy) costs ~0.4 s of CPU to import; it comes with the first picture, not
    # with this module, which harness.notebook (and every test process collecting its tests) imports
    from matplotlib.figure import Figure

    class Picture(Figure):
        """A matplotlib figure that shows itself in notebooks without pyplot (``_repr_png_``)."""

        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=90)
            return buffer.getvalue()

        def to_html(self) -> str:
            """The figure as an ``<img>`` tag (for static views of widgets)."""
            data = base64.b64encode(self._repr_png_()).decode()
            return f"<img src='data:image/png;base64,{data}' style='max-width:100%'/>"

    Picture.__module__, Picture.__qualname__ = __name__, "Picture"
    return Picture


def __getattr__(name: str):
    """``Picture``: a ``matplotlib.figure.Figure`` that shows itself in notebooks, made on first use."""
    if name == "Picture":
        return _picture_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _figure(width: float, height: float) -> "Figure":
    return _picture_class()(figsize=(width, height), layout="constrained")


# -- the access matrix ------------------------------------------------------------------------
def access_heatmap(
    analysis: "Analysis",
    identities: Iterable[str] | None = None,
    services: Iterable[str] | None = None,
    *,
    ax=None,
    highlight: tuple[str, str] | None = None,
    max_labels: int = 40,
):
    """Draw identity x service access as a heatmap; return the figure.

    Up to ``max_labels`` rows (or columns) are labelled by name, in the given
    order (sorted by default). Past that, rows (or columns) with the same access
    are grouped, the groups ordered by how much access they hold, and each group
    is labelled by the role attributes its members share and its size.

    Args:
        analysis: the analysis to draw.
        identities, services: the rows and columns (all, sorted, by default).
        ax: an existing matplotlib Axes to draw on.
        highlight: an (identity, service) cell to outline.
        max_labels: label names up to this many rows or columns, groups past it.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch, Rectangle

    matrix = analysis.matrix(identities, services)
    codes = matrix.codes()
    rows = _layout(analysis, "identities", matrix.identities, codes, max_labels)
    cols = _layout(analysis, "services", matrix.services, codes.T, max_labels)
    codes = codes[rows.order][:, cols.order]
    if ax is None:
        fig = _figure(
            min(4 + len(cols.ticks) * 0.3 + (2.5 if cols.grouped else 0), 16),
            min(2.8 + len(rows.ticks) * 0.3 + (1.5 if rows.grouped else 0), 12),
        )
        ax = fig.add_subplot()
    ax.imshow(
        codes,
        cmap=ListedColormap([_cell_colour(c) for c in range(16)]),
        vmin=0,
        vmax=15,
        aspect="auto",
        interpolation="nearest",
    )
    for layout, setter, line in ((cols, ax.set_xticks, ax.axvline), (rows, ax.set_yticks, ax.axhline)):
        setter([t for t, _ in layout.ticks], labels=[label for _, label in layout.ticks], fontsize=8)
        for edge in layout.edges:
            line(edge - 0.5, color="white", linewidth=1.2)
    for label in ax.get_xticklabels():  # anchored at the tick's end, so each name sits under its column
        label.set(rotation=60, ha="right", rotation_mode="anchor")
    ax.set_xlabel(f"services ({len(cols.order)}){', grouped by access' if cols.grouped else ''}")
    ax.set_ylabel(f"identities ({len(rows.order)}){', grouped by access' if rows.grouped else ''}")
    if highlight and highlight[0] in rows.names and highlight[1] in cols.names:
        row, col = rows.names.index(highlight[0]), cols.names.index(highlight[1])
        ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="#d62728", linewidth=2.5))
    shown = {int(c) for c in set(codes.flat)}
    handles = [
        Patch(facecolor=_cell_colour(c), edgecolor="#888", label=label)
        for c, label in LEGEND
        if c in (0, 5) or any(_cell_colour(s) == _cell_colour(c) for s in shown)
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    counts = matrix.counts()
    refused = f", {counts['posture_fails']} refused by posture" if counts["posture_fails"] else ""
    ax.set_title(f"who can reach what\n{counts['any']} pairs allowed, {counts['usable']} usable{refused}", fontsize=10)
    return ax.figure


@dataclass
class _Axis:
    """One axis of the heatmap: the order of its entries, tick positions and labels, group edges."""

    order: list[int]
    names: list[str]
    ticks: list[tuple[float, str]]
    edges: list[int]
    grouped: bool


def _layout(analysis: "Analysis", key: str, names: list[str], codes, max_labels: int) -> _Axis:
    """Names as given when few; else entries with equal access grouped and labelled by shared attributes."""
    if len(names) <= max_labels:
        return _Axis(list(range(len(names))), names, [(i, n) for i, n in enumerate(names)], [], False)
    groups: dict[bytes, list[int]] = {}
    for index in range(len(names)):
        groups.setdefault(codes[index].tobytes(), []).append(index)
    pop = analysis.populations[key]
    attrs = [pop.attrs[pop.index[name]] for name in names]
    ordered = sorted(groups.values(), key=lambda members: (-int((codes[members[0]] & 3 > 0).sum()), -len(members)))
    order, centres, edges = [], [], []
    for members in ordered:
        centres.append(len(order) + (len(members) - 1) / 2)
        order += members
        edges.append(len(order))
    # label the biggest groups first, skipping any that would overlap a label already placed
    gap, kept = len(names) / (1.5 * max_labels), []
    for number in sorted(range(len(ordered)), key=lambda g: -len(ordered[g])):
        if len(kept) < max_labels and all(abs(centres[number] - centres[k]) >= gap for k in kept):
            kept.append(number)
    ticks = [
        (centres[g], _group_label([names[m] for m in ordered[g]], [attrs[m] for m in ordered[g]])) for g in sorted(kept)
    ]
    return _Axis(order, [names[i] for i in order], ticks, edges[:-1] if len(ordered) <= 80 else [], True)


def _group_label(names: list[str], attrs: list[frozenset[str]], limit: int = 3) -> str:
    if len(names) == 1:
        return names[0]
    shared = sorted(frozenset.intersection(*attrs))
    text = " ".join("#" + a for a in shared[:limit]) + (" ..." if len(shared) > limit else "")
    return f"{text or 'no shared attribute'} ({len(names)})"


# -- the policy graph --------------------------------------------------------------------------
#: policy kind -> its node kind, then (role list, member kind) for its source side and its target side
WIRING = {
    "servicePolicies": ("servicePolicy", ("identityRoles", "identity"), ("serviceRoles", "service")),
    "edgeRouterPolicies": ("edgeRouterPolicy", ("identityRoles", "identity"), ("edgeRouterRoles", "edgeRouter")),
    "serviceEdgeRouterPolicies": (
        "serviceEdgeRouterPolicy",
        ("serviceRoles", "service"),
        ("edgeRouterRoles", "edgeRouter"),
    ),
}
POPULATIONS = {
    "identity": "identities",
    "service": "services",
    "edgeRouter": "edgeRouters",
    "postureCheck": "postureChecks",
}
HEADINGS = {
    0: "identities",
    1: "posture checks",
    2: "service / edge router policies",
    3: "services",
    4: "service edge router policies",
    5: "edge routers",
}


def policy_graph(analysis: "Analysis"):
    """A networkx DiGraph of identities, posture checks, policies, services and edge routers.

    Nodes are ``(kind, name)`` with attributes ``kind``, ``name`` and ``layer``;
    edges run identity -> service policy -> service, posture check -> the
    service policies requiring it, identity -> edge router policy -> edge
    router, service -> service edge router policy -> edge router.
    """
    import networkx as nx

    graph = nx.DiGraph()
    for kind, key in POPULATIONS.items():
        for name in analysis.populations[key].names:
            graph.add_node((kind, name), kind=kind, name=name, layer=LAYERS[kind])
    for key, (kind, source, target) in WIRING.items():
        for policy in analysis.policies[key]:
            node = (kind, policy.name)
            graph.add_node(node, kind=kind, name=policy.name, layer=LAYERS[kind], type=policy.type)
            for (wire, member_kind), incoming in ((source, True), (target, False)):
                pop = analysis.populations[POPULATIONS[member_kind]]
                for member in pop.names_of(pop.mask(policy.matches[wire])):
                    edge = ((member_kind, member), node) if incoming else (node, (member_kind, member))
                    graph.add_edge(*edge)
            if key == "servicePolicies":
                for check in analysis.policy_posture(policy):
                    graph.add_edge(("postureCheck", check), node)
    unused = [n for n, d in graph.nodes(data=True) if d["kind"] == "postureCheck" and not graph.degree(n)]
    graph.remove_nodes_from(unused)  # checks no policy requires are not on any path
    return graph


def draw_policy_graph(analysis: "Analysis", *, ax=None, explanation: "Explanation | None" = None):
    """Draw :func:`policy_graph` in layers; with an explanation, its path stands out. Returns the figure.

    The path is green when the identity can connect, red when it cannot; the
    posture checks on it are ringed green (pass), red (fail) or grey (unknown).
    """
    import networkx as nx

    graph = policy_graph(analysis)
    if ax is None:
        tallest = max(Counter(d["layer"] for _, d in graph.nodes(data=True)).values(), default=1)
        fig = _figure(13, min(3 + tallest * 0.5, 14))
        ax = fig.add_subplot()
    ax.set_axis_off()
    if not graph:
        return ax.figure
    pos = nx.multipartite_layout(graph, subset_key="layer")
    focus, verdicts = _focus(explanation) if explanation else ({}, {})
    path = VERDICT_COLOURS[explanation.can_connect] if explanation else None
    faded = bool(focus)
    edge_colours = [
        path if (u in focus and v in focus) else ("#dddddd" if faded else "#aaaaaa") for u, v in graph.edges
    ]
    nx.draw_networkx_edges(
        graph, pos, ax=ax, edge_color=edge_colours, arrows=True, arrowsize=8, width=1.0, node_size=250
    )
    nodes = list(graph.nodes)
    nx.draw_networkx_nodes(
        graph,
        pos,
        ax=ax,
        nodelist=nodes,
        node_color=[NODE_COLOURS[graph.nodes[n]["kind"]] for n in nodes],
        node_size=[420 if n in focus else 250 for n in nodes],
        alpha=[1.0 if (not faded or n in focus) else 0.35 for n in nodes],
        edgecolors=[VERDICT_COLOURS[verdicts[n]] if n in verdicts else "none" for n in nodes],
        linewidths=[3 if n in verdicts else 0 for n in nodes],
    )
    labels = {
        n: n[1] + {True: " (passes)", False: " (FAILS)", None: " (not evaluated)"}[verdicts[n]]
        if n in verdicts
        else n[1]
        for n in nodes
    }
    nx.draw_networkx_labels(graph, pos, ax=ax, labels=labels, font_size=7, verticalalignment="bottom")
    for layer, heading in HEADINGS.items():
        xs = [pos[n][0] for n in nodes if graph.nodes[n]["layer"] == layer]
        if xs:
            ax.annotate(
                heading, (xs[0], 1.02), xycoords=("data", "axes fraction"), ha="center", fontsize=9, weight="bold"
            )
    if explanation:
        ax.set_title(explanation.headline(), color=path, fontsize=10, loc="left", pad=22)
    return ax.figure


def _focus(ex: "Explanation") -> tuple[set[tuple[str, str]], dict[tuple[str, str], bool | None]]:
    """The nodes on an explanation's path, and the verdict of each posture check on it.

    The path: the identity and the service, the granting policies and the
    posture checks they require, common routers and the policies linking them.
    """
    nodes = {("identity", ex.identity), ("service", ex.service)}
    verdicts: dict[tuple[str, str], bool | None] = {}
    for check in ex.policies:
        if check.grants:
            nodes.add(("servicePolicy", check.policy))
            for result in check.posture:
                node = ("postureCheck", result.name)
                verdicts[node] = False if verdicts.get(node) is False else result.passing
    nodes |= set(verdicts)
    for router in ex.common_routers:
        nodes.add(("edgeRouter", router))
        nodes |= {("edgeRouterPolicy", p) for p in ex.identity_routers.get(router, [])}
        nodes |= {("serviceEdgeRouterPolicy", p) for p in ex.service_routers.get(router, [])}
    return nodes, verdicts


# -- the explorer, as a picture ----------------------------------------------------------------
def explorer_figure(
    analysis: "Analysis",
    explanation: "Explanation",
    *,
    title: str = "policy explorer",
    controls: list[str] | None = None,
):
    """The explorer's state in one figure: controls and explanation on the left, heatmap on the right."""
    import textwrap

    fig = _figure(16, 8)
    left, right = fig.subfigures(1, 2, width_ratios=[1.5, 1])
    ax = left.add_subplot()
    ax.set_axis_off()
    lines: list[tuple[str, dict]] = [(title, {"fontsize": 15, "weight": "bold"})]
    lines += [(line, {"fontsize": 10, "family": "monospace", "color": "#1f4e79"}) for line in controls or []]
    colour = "#2e7d32" if explanation.can_connect else "#c62828"
    lines.append((explanation.headline(), {"fontsize": 12.5, "weight": "bold", "color": colour}))
    for line in explanation.lines()[1:]:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        style = {"fontsize": 8.6, "family": "monospace", "color": "#c62828" if "FAILS" in line else "#222222"}
        if line.lstrip().startswith("smallest change"):
            style.update(weight="bold", color="#1f4e79")
        for part in textwrap.wrap(line, 124, subsequent_indent=indent, break_on_hyphens=False) or [""]:
            lines.append((part, style))
    y, step = 1.0, min(0.045, 0.98 / max(len(lines), 1))
    for text, style in lines:
        ax.text(0, y, text, va="top", transform=ax.transAxes, **style)
        y -= step * (1.5 if style.get("fontsize", 9) > 11 else 1)
    access_heatmap(analysis, ax=right.add_subplot(), highlight=(explanation.identity, explanation.service))
    return fig


# -- routers, links and the path of a dial ---------------------------------------------------------
ROUTER_ROLES = {"entry": "#2f7dc8", "host": "#e8871e", "both": "#7b4fa6", "other": "#b5b5b5"}


def draw_dial_paths(paths: "DialPaths", *, entry: str | None = None, ax=None):
    """Routers and links of :func:`harness.analysis.paths.dial_paths` with one route drawn. Returns the figure.

    Entry routers (where the identity may dial in) are blue, routers hosting a terminator orange (purple
    when both), others grey; an offline router is ringed red; a link is labelled with its cost and dashed
    when down. The route drawn thick green is the likeliest one from ``entry`` (default: the first entry
    router that has one); the title is the analysis's headline.
    """
    import networkx as nx

    graph = nx.Graph()
    hosts = {t["router"] for t in paths.terminators}
    for name in sorted(set(paths.online) | set(paths.common) | hosts):
        graph.add_node(name)
    for link in paths.links:
        graph.add_edge(link["source"], link["target"], cost=link["cost"], down=link["down"])
    if ax is None:
        fig = _figure(7, 5)
        ax = fig.add_subplot()
    ax.set_axis_off()
    ax.margins(0.12)
    chosen = next((e.likely for e in paths.entries if e.router == entry), None) if entry else paths.likely
    on_path = {frozenset((h.source, h.target)) for h in chosen.hops} if chosen else set()
    if not graph:
        return ax.figure
    pos = nx.circular_layout(sorted(graph.nodes)) if len(graph) > 1 else {next(iter(graph)): (0.0, 0.0)}
    edges = list(graph.edges)
    nx.draw_networkx_edges(
        graph,
        pos,
        ax=ax,
        edgelist=edges,
        width=[4 if frozenset(e) in on_path else 1.2 for e in edges],
        edge_color=["#2e7d32" if frozenset(e) in on_path else "#999999" for e in edges],
        style=["dashed" if graph.edges[e]["down"] else "solid" for e in edges],
    )
    labels = {e: str(graph.edges[e]["cost"]) + (" (down)" if graph.edges[e]["down"] else "") for e in edges}
    nx.draw_networkx_edge_labels(graph, pos, ax=ax, edge_labels=labels, font_size=7, label_pos=0.35)

    def role(name: str) -> str:
        kind = ("entry" if name in paths.common else "") + ("host" if name in hosts else "")
        return {"entryhost": "both", "entry": "entry", "host": "host"}.get(kind, "other")

    nodes = list(graph.nodes)
    nx.draw_networkx_nodes(
        graph,
        pos,
        ax=ax,
        nodelist=nodes,
        node_color=[ROUTER_ROLES[role(n)] for n in nodes],
        node_size=[700 if chosen and n in chosen.path else 450 for n in nodes],
        edgecolors=["#c62828" if not paths.online.get(n) else "none" for n in nodes],
        linewidths=[3 if not paths.online.get(n) else 0 for n in nodes],
    )
    above = {n: (x, y + 0.09) for n, (x, y) in pos.items()}
    nx.draw_networkx_labels(graph, above, ax=ax, font_size=8, verticalalignment="bottom")
    from matplotlib.lines import Line2D

    legend = [
        Line2D([], [], marker="o", linestyle="", color=ROUTER_ROLES[key], label=text)
        for key, text in (("entry", "dial enters here"), ("host", "terminator here"), ("both", "both"))
    ]
    legend.append(Line2D([], [], color="#2e7d32", linewidth=3, label="the path"))
    ax.legend(handles=legend, loc="lower left", fontsize=7, frameon=False)
    if chosen and entry:
        title = f"{paths.identity} dials {paths.service} in at {entry}: {chosen.path_text()} (cost {chosen.total_cost})"
    elif entry:
        found = next((e for e in paths.entries if e.router == entry), None)
        why = found.reason if found else f"{entry} is not a router {paths.identity} may dial {paths.service} through"
        title = f"{paths.identity} dials {paths.service} in at {entry}: no path ({why or paths.reason})"
    else:
        title = paths.headline()
    ax.set_title(title, color=VERDICT_COLOURS[chosen is not None], fontsize=9, loc="left", wrap=True)
    return ax.figure


# Picture comes from the module's __getattr__
__all__ = ["Picture", "access_heatmap", "draw_dial_paths", "draw_policy_graph", "explorer_figure", "policy_graph"]  # noqa: F822
