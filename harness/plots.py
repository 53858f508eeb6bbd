"""Pictures of an analysis: the access heatmap, the policy graph, the event timeline.

Plain functions that return matplotlib figures (built with
``matplotlib.figure.Figure``, so they work headless and never touch pyplot's
global state); the widgets in :mod:`harness.notebook` call them. Needs the
``notebooks`` extra (matplotlib, networkx, pandas).
"""
from __future__ import annotations

import io
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Iterable

from matplotlib.figure import Figure

if TYPE_CHECKING:
    from harness.analysis import Analysis, Explanation

#: heatmap cell codes (see AccessMatrix.codes) -> colour and legend label
CELL_COLOURS = ["#f4f4f4", "#b9d4ee", "#f6d3a8", "#d9c2e8", "#f4f4f4", "#2f7dc8", "#e8871e", "#7b4fa6"]
LEGEND = [(5, "dial"), (6, "bind"), (7, "dial + bind"), (1, "allowed, no shared router"), (0, "no access")]
LAYERS = {"identity": 0, "servicePolicy": 1, "edgeRouterPolicy": 1, "service": 2, "serviceEdgeRouterPolicy": 3, "edgeRouter": 4}
NODE_COLOURS = {"identity": "#2f7dc8", "service": "#e8871e", "edgeRouter": "#4a9d5b", "servicePolicy": "#9a9a9a",
                "edgeRouterPolicy": "#b5b5b5", "serviceEdgeRouterPolicy": "#c9c9c9"}


class Picture(Figure):
    """A matplotlib figure that shows itself in notebooks without pyplot (``_repr_png_``)."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=90)
        return buffer.getvalue()


def _figure(width: float, height: float) -> Picture:
    return Picture(figsize=(width, height), layout="constrained")


# -- the access matrix ------------------------------------------------------------------------
def access_heatmap(analysis: "Analysis", identities: Iterable[str] | None = None, services: Iterable[str] | None = None,
                   *, ax=None, highlight: tuple[str, str] | None = None, max_labels: int = 60):
    """Draw identity x service access as a heatmap; return the figure.

    Args:
        analysis: the analysis to draw.
        identities, services: the rows and columns (all, sorted, by default).
        ax: an existing matplotlib Axes to draw on.
        highlight: an (identity, service) cell to outline.
        max_labels: leave tick labels out past this many rows or columns.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch, Rectangle

    matrix = analysis.matrix(identities, services)
    codes = matrix.codes()
    if ax is None:
        rows, cols = codes.shape
        fig = _figure(min(3 + cols * 0.45, 16), min(2.5 + rows * 0.32, 12))
        ax = fig.add_subplot()
    ax.imshow(codes, cmap=ListedColormap(CELL_COLOURS), vmin=0, vmax=7, aspect="auto", interpolation="nearest")
    for names, setter in ((matrix.services, ax.set_xticks), (matrix.identities, ax.set_yticks)):
        if len(names) <= max_labels:
            setter(range(len(names)), labels=names)
        else:
            setter([])
    ax.tick_params(axis="x", labelrotation=60)
    ax.set_xlabel(f"services ({len(matrix.services)})")
    ax.set_ylabel(f"identities ({len(matrix.identities)})")
    refused = _posture_refused(analysis, matrix, codes)
    if refused:
        rows_, cols_ = zip(*refused)
        ax.scatter(cols_, rows_, marker="x", s=60, color="#c62828", linewidths=2, label="posture fails")
    if highlight and highlight[0] in matrix.identities and highlight[1] in matrix.services:
        row, col = matrix.identities.index(highlight[0]), matrix.services.index(highlight[1])
        ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="#d62728", linewidth=2.5))
    handles = [Patch(facecolor=CELL_COLOURS[c], edgecolor="#888", label=label) for c, label in LEGEND]
    if refused:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="x", color="#c62828", linestyle="", markersize=8, label="posture fails"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    counts = matrix.counts()
    ax.set_title(f"who can reach what: {counts['any']} pairs allowed, {counts['usable']} usable")
    return ax.figure


def _posture_refused(analysis: "Analysis", matrix, codes, limit: int = 20_000) -> list[tuple[int, int]]:
    """Cells (row, column) allowed and routed whose sessions posture would refuse (small matrices only)."""
    if analysis.posture_data is None or not analysis.check_items or codes.size > limit:
        return []
    out = []
    for row, col in zip(*codes.nonzero()):
        identity, service = matrix.identities[row], matrix.services[col]
        types = [t for t, bit in (("Dial", 1), ("Bind", 2)) if codes[row, col] & bit]
        if codes[row, col] & 4 and all(analysis.posture_ok(identity, service, t) is False for t in types):
            out.append((int(row), int(col)))
    return out


# -- the policy graph --------------------------------------------------------------------------
def policy_graph(analysis: "Analysis"):
    """A networkx DiGraph of identities, policies, services and edge routers.

    Nodes are ``(kind, name)`` with attributes ``kind``, ``name`` and ``layer``;
    edges run identity -> service policy -> service, identity -> edge router
    policy -> edge router, service -> service edge router policy -> edge router.
    """
    import networkx as nx

    graph = nx.DiGraph()
    for kind, key in (("identity", "identities"), ("service", "services"), ("edgeRouter", "edgeRouters")):
        for name in analysis.populations[key].names:
            graph.add_node((kind, name), kind=kind, name=name, layer=LAYERS[kind])
    # policy kind -> its node kind, then (role list, member kind) for its source side and its target side
    wiring = {"servicePolicies": ("servicePolicy", ("identityRoles", "identity"), ("serviceRoles", "service")),
              "edgeRouterPolicies": ("edgeRouterPolicy", ("identityRoles", "identity"), ("edgeRouterRoles", "edgeRouter")),
              "serviceEdgeRouterPolicies": ("serviceEdgeRouterPolicy", ("serviceRoles", "service"),
                                            ("edgeRouterRoles", "edgeRouter"))}
    populations = {"identity": "identities", "service": "services", "edgeRouter": "edgeRouters"}
    for key, (kind, source, target) in wiring.items():
        for policy in analysis.policies[key]:
            node = (kind, policy.name)
            graph.add_node(node, kind=kind, name=policy.name, layer=LAYERS[kind], type=policy.type)
            for (wire, member_kind), incoming in ((source, True), (target, False)):
                pop = analysis.populations[populations[member_kind]]
                for member in pop.names_of(pop.mask(policy.matches[wire])):
                    edge = ((member_kind, member), node) if incoming else (node, (member_kind, member))
                    graph.add_edge(*edge)
    return graph


def draw_policy_graph(analysis: "Analysis", *, ax=None, explanation: "Explanation | None" = None):
    """Draw :func:`policy_graph` in layers; with an explanation, its path stands out. Returns the figure."""
    import networkx as nx

    graph = policy_graph(analysis)
    if ax is None:
        tallest = max(Counter(d["layer"] for _, d in graph.nodes(data=True)).values(), default=1)
        fig = _figure(12, min(3 + tallest * 0.5, 14))
        ax = fig.add_subplot()
    if not graph:
        ax.set_axis_off()
        return ax.figure
    pos = nx.multipartite_layout(graph, subset_key="layer")
    focus = _focus(explanation) if explanation else set()
    faded = bool(focus)
    edge_colours = ["#d62728" if (u in focus and v in focus) else ("#dddddd" if faded else "#aaaaaa") for u, v in graph.edges]
    nx.draw_networkx_edges(graph, pos, ax=ax, edge_color=edge_colours, arrows=True, arrowsize=8, width=1.0,
                           node_size=250)
    nodes = list(graph.nodes)
    colours = [NODE_COLOURS[graph.nodes[n]["kind"]] for n in nodes]
    sizes = [420 if n in focus else 250 for n in nodes]
    alphas = [1.0 if (not faded or n in focus) else 0.35 for n in nodes]
    nx.draw_networkx_nodes(graph, pos, ax=ax, nodelist=nodes, node_color=colours, node_size=sizes, alpha=alphas,
                           node_shape="o")
    nx.draw_networkx_labels(graph, pos, ax=ax, labels={n: n[1] for n in nodes}, font_size=7,
                            verticalalignment="bottom")
    for kind, layer in LAYERS.items():
        xs = [pos[n][0] for n in nodes if graph.nodes[n]["layer"] == layer]
        if xs and kind in ("identity", "service", "edgeRouter", "serviceEdgeRouterPolicy"):
            label = {"identity": "identities", "service": "services", "edgeRouter": "edge routers",
                     "serviceEdgeRouterPolicy": "service edge router policies"}[kind]
            ax.annotate(label, (xs[0], 1.02), xycoords=("data", "axes fraction"), ha="center", fontsize=9, weight="bold")
    ax.annotate("service / edge router policies", (min(pos[n][0] for n in nodes if graph.nodes[n]["layer"] == 1)
                                                   if any(graph.nodes[n]["layer"] == 1 for n in nodes) else 0, 1.02),
                xycoords=("data", "axes fraction"), ha="center", fontsize=9, weight="bold")
    ax.set_axis_off()
    return ax.figure


def _focus(ex: "Explanation") -> set[tuple[str, str]]:
    """The nodes on an explanation's path: granting policies, common routers and the policies linking them."""
    nodes = {("identity", ex.identity), ("service", ex.service)}
    nodes |= {("servicePolicy", c.policy) for c in ex.policies if c.grants}
    for router in ex.common_routers:
        nodes.add(("edgeRouter", router))
        nodes |= {("edgeRouterPolicy", p) for p in ex.identity_routers.get(router, [])}
        nodes |= {("serviceEdgeRouterPolicy", p) for p in ex.service_routers.get(router, [])}
    return nodes


# -- the explorer, as a picture ----------------------------------------------------------------
def explorer_figure(analysis: "Analysis", explanation: "Explanation", *, title: str = "policy explorer",
                    controls: list[str] | None = None):
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


# -- the event timeline ------------------------------------------------------------------------
def event_rows(events: Iterable[dict], names: dict[str, str] | None = None) -> list[dict]:
    """Controller events as flat rows: time, namespace, type, entity, identity (by name when known)."""
    names = names or {}
    rows = []
    for event in events:
        identity = event.get("identity_id")
        entity = event.get("entityType")
        rows.append({
            "time": event["timestamp"], "namespace": event["namespace"],
            "type": event.get("event_type") or event.get("eventType") or "",
            "entity": f"{entity}/{names.get(event.get('entityId'), event.get('entityId'))}" if entity else "",
            "identity": names.get(identity, identity) or "",
        })
    return rows


def timeline_frame(events: Iterable[dict], names: dict[str, str] | None = None):
    """:func:`event_rows` as a pandas DataFrame with a datetime ``time`` column."""
    from harness.explain import pandas

    pd = pandas()
    frame = pd.DataFrame(event_rows(events, names), columns=["time", "namespace", "type", "entity", "identity"])
    frame["time"] = pd.to_datetime(frame["time"])
    return frame


def plot_timeline(events: Iterable[dict], names: dict[str, str] | None = None, *, ax=None):
    """One lane per namespace and type, one dot per event (size: events at that instant). Returns the figure."""
    rows = event_rows(events, names)
    lanes = sorted({(r["namespace"], r["type"]) for r in rows})
    if ax is None:
        fig = _figure(12, min(2 + 0.4 * len(lanes), 9))
        ax = fig.add_subplot()
    counts = Counter((datetime.fromisoformat(r["time"].replace("Z", "+00:00")), (r["namespace"], r["type"])) for r in rows)
    lane_of = {lane: n for n, lane in enumerate(lanes)}
    for (when, lane), count in sorted(counts.items()):
        ax.scatter([when], [lane_of[lane]], s=18 + 10 * count, color=f"C{lane_of[lane] % 10}", alpha=0.75)
    ax.set_yticks(range(len(lanes)), labels=[f"{ns} {kind}".strip() for ns, kind in lanes])
    ax.set_xlabel("controller clock")
    ax.set_title(f"{len(rows)} events")
    ax.grid(axis="x", color="#eeeeee")
    return ax.figure


__all__ = ["Picture", "access_heatmap", "draw_policy_graph", "event_rows", "explorer_figure", "plot_timeline", "policy_graph",
           "timeline_frame"]
