"""The controller's events over time: rows, a DataFrame and a picture.

The picture has one lane per namespace and type, one colour per client
(identity), and a dashed line wherever an administrator changed the network
(an ``entityChange`` made through the management API). Events of kinds this
module does not know (router events, say) get a lane like the rest, and grey
dots when they name no identity. Needs the ``notebooks`` extra.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from typing import Iterable

from harness.analysis.plots import _figure

NO_IDENTITY = "(no identity)"
NEUTRAL = "#9a9a9a"
#: entity kinds whose changes are the network's own life, not an administrator's change
RUNTIME_KINDS = {"apiSessions", "sessions", "postureResponses", "authenticators", "enrollments", "mfas"}
IGNORED_FIELDS = {"updated_at", "updatedAt", "last_seen", "lastSeen"}


def identity_of(event: dict) -> str | None:
    """The id of the identity an event concerns, whatever the emitter called the field.

    An entity change concerns the identity changed, or the one its record names (sessions).
    """
    found = event.get("identity_id") or event.get("identityId") or event.get("identity")
    if found or event.get("namespace") != "entityChange":
        return found
    if event.get("entityType") == "identities":
        return event.get("entityId")
    state = event.get("finalState") or event.get("initialState") or {}
    return state.get("identity_id") or state.get("identityId")


def event_rows(events: Iterable[dict], names: dict[str, str] | None = None) -> list[dict]:
    """Controller events as flat rows: time, namespace, type, entity, identity (by name when known)."""
    names = names or {}
    rows = []
    for event in events:
        identity, entity = identity_of(event), event.get("entityType")
        rows.append(
            {
                "time": event.get("timestamp", ""),
                "namespace": event.get("namespace", "(none)"),
                "type": event.get("event_type") or event.get("eventType") or "",
                "entity": f"{entity}/{names.get(event.get('entityId'), event.get('entityId'))}" if entity else "",
                "identity": names.get(identity, identity) or "",
                "path": path_of(event, names),
            }
        )
    return rows


def path_of(event: dict, names: dict[str, str] | None = None) -> str:
    """A circuit event's routers, dialer's side first (``a > b``, by name when known); "" for other events."""
    nodes = (event.get("path") or {}).get("nodes") if isinstance(event.get("path"), dict) else None
    return " > ".join((names or {}).get(node, node) for node in nodes) if nodes else ""


def timeline_frame(events: Iterable[dict], names: dict[str, str] | None = None):
    """:func:`event_rows` as a pandas DataFrame with a datetime ``time`` column."""
    from harness.analysis.explain import pandas

    pd = pandas()
    frame = pd.DataFrame(event_rows(events, names), columns=["time", "namespace", "type", "entity", "identity"])
    frame["time"] = pd.to_datetime(frame["time"])
    return frame


def is_change(event: dict) -> bool:
    """Whether an event is an administrator's change to the network (made through the management API)."""
    if event.get("namespace") != "entityChange" or event.get("entityType") in RUNTIME_KINDS:
        return False
    path = ((event.get("metadata") or {}).get("source") or {}).get("path") or ""
    return not path or "/management/" in path


def change_label(event: dict, names: dict[str, str] | None = None) -> str:
    """``updated identities/dev.ops (role_attributes)``: what changed, by name, with the fields."""
    names = names or {}
    before, after = event.get("initialState") or {}, event.get("finalState") or {}
    fields = sorted(k for k in set(before) | set(after) if k not in IGNORED_FIELDS and before.get(k) != after.get(k))
    detail = f" ({', '.join(fields[:2])}{', ...' if len(fields) > 2 else ''})" if before and after and fields else ""
    entity = names.get(event.get("entityId"), event.get("entityId"))
    return f"{event.get('eventType', 'changed')} {event.get('entityType')}/{entity}{detail}"


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def plot_timeline(
    events: Iterable[dict], names: dict[str, str] | None = None, *, ax=None, changes: Iterable[dict] | None = None
):
    """Lanes per namespace and type, a colour per identity, dashed lines at network changes. Returns the figure.

    Dot size grows with the events of one identity at one instant in one lane.
    ``changes`` are the events to mark as lines (by default the changes among ``events``).
    """
    from matplotlib.lines import Line2D

    names = names or {}
    events = [e for e in events if e.get("timestamp")]
    changes = [e for e in (events if changes is None else changes) if is_change(e)]
    others = [e for e in events if not is_change(e)]
    rows = event_rows(others, names)
    lanes = sorted({(r["namespace"], r["type"]) for r in rows})
    clients = sorted({r["identity"] for r in rows if r["identity"]})
    colour = {client: f"C{n % 10}" for n, client in enumerate(clients)} | {"": NEUTRAL}
    if ax is None:
        ax = _figure(12, min(2.4 + 0.42 * len(lanes), 9)).add_subplot()
    lane_of = {lane: n for n, lane in enumerate(lanes)}
    counts = Counter((_when(r["time"]), (r["namespace"], r["type"]), r["identity"]) for r in rows)
    spread = 0.5 / max(len(clients), 1)  # clients side by side within a lane
    for (when, lane, client), count in sorted(counts.items()):
        offset = (clients.index(client) - (len(clients) - 1) / 2) * spread if client else 0
        ax.scatter(
            [when],
            [lane_of[lane] + offset],
            s=24 + 12 * count,
            color=colour[client],
            alpha=0.85,
            edgecolors="white",
            linewidths=0.5,
        )
    _mark_changes(ax, changes, names, len(lanes))
    ax.set_yticks(range(len(lanes)), labels=[f"{ns} {kind}".strip() for ns, kind in lanes], fontsize=8)
    ax.set_ylim(-0.7, max(len(lanes), 1) - 0.3)
    ax.set_xlabel("controller clock")
    ax.set_title(f"{len(rows)} events" + (f", {len(changes)} network change(s)" if changes else ""))
    ax.grid(axis="x", color="#eeeeee")
    handles = [Line2D([], [], marker="o", linestyle="", color=colour[c], label=c) for c in clients]
    if "" in {r["identity"] for r in rows}:
        handles.append(Line2D([], [], marker="o", linestyle="", color=NEUTRAL, label=NO_IDENTITY))
    if changes:
        handles.append(Line2D([], [], linestyle="--", color="#c62828", label="network change"))
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    return ax.figure


def _mark_changes(ax, changes: list[dict], names: dict[str, str], lanes: int) -> None:
    """One dashed line per instant with changes, labelled with what changed."""
    by_time: dict[datetime, list[str]] = defaultdict(list)
    for event in changes:
        by_time[_when(event["timestamp"])].append(change_label(event, names))
    for when, labels in sorted(by_time.items()):
        ax.axvline(when, color="#c62828", linestyle="--", linewidth=1.2)
        text = labels[0] if len(labels) == 1 else f"{labels[0]} and {len(labels) - 1} more"
        ax.annotate(
            text,
            (when, max(lanes, 1) - 0.35),
            xytext=(3, 0),
            textcoords="offset points",
            fontsize=7.5,
            color="#c62828",
            rotation=90,
            va="top",
            ha="left",
        )


__all__ = ["change_label", "event_rows", "identity_of", "is_change", "plot_timeline", "timeline_frame"]
