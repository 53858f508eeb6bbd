"""Access of a whole network state: the identity x service matrix, and the diff between two states."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.analysis.explain import pandas
from harness.network.populations import BIND, DIAL, TYPES, bits, mask_of

if TYPE_CHECKING:
    from harness.analysis import Analysis

USABLE = None  # the kind of access that is a permission plus a shared edge router


class AccessMatrix(Mapping):
    """Identity x service access of one analysis, computed from masks on demand."""

    def __init__(self, analysis: Analysis, identities: list[str], services: list[str]):
        self.analysis, self.identities, self.services = analysis, identities, services
        ids, self._svcs = analysis.populations["identities"], analysis.populations["services"]
        self._positions = [ids.position(name, "identity") for name in identities]
        self._columns = [self._svcs.position(name, "service") for name in services]
        self._chosen = (set(identities), set(services))
        keep = mask_of(self._columns, len(self._svcs))
        self._rows = [
            (analysis.services_mask(i, DIAL) & keep, analysis.services_mask(i, BIND) & keep) for i in self._positions
        ]
        self._refused: dict[int, int] = {}

    def __getitem__(self, key: tuple[str, str]) -> dict:
        identity, service = key
        if identity not in self._chosen[0] or service not in self._chosen[1]:
            raise KeyError(key)
        dial, bind = self.analysis.can(identity, service, DIAL), self.analysis.can(identity, service, BIND)
        if not (dial or bind):
            raise KeyError(key)
        return {"dial": dial, "bind": bind, "routers": self.analysis.routers_for(identity, service)}

    def __iter__(self) -> Iterator[tuple[str, str]]:
        names = self._svcs.names
        for identity, (dial, bind) in zip(self.identities, self._rows):
            for s in bits(dial | bind):
                yield identity, names[s]

    def __len__(self) -> int:
        return sum((dial | bind).bit_count() for dial, bind in self._rows)

    def _usable(self, row: int) -> int:
        return self.analysis.usable_mask(self._positions[row])

    def refused(self, row: int) -> int:
        """Services of row ``row`` allowed, but whose every allowed type posture refuses (known posture only)."""
        if row not in self._refused:
            dial, bind = self._rows[row]
            position, analysis = self._positions[row], self.analysis
            open_dial = dial & ~analysis.posture_refused_mask(position, DIAL) if dial else 0
            open_bind = bind & ~analysis.posture_refused_mask(position, BIND) if bind else 0
            self._refused[row] = (dial | bind) & ~(open_dial | open_bind)
        return self._refused[row]

    def counts(self) -> dict[str, int]:
        """Pairs with dial, bind, either; usable (a shared edge router, posture not refusing); refused by posture."""
        out = {
            "identities": len(self.identities),
            "services": len(self.services),
            "dial": 0,
            "bind": 0,
            "any": 0,
            "usable": 0,
            "posture_fails": 0,
        }
        for row, (dial, bind) in enumerate(self._rows):
            out["dial"] += dial.bit_count()
            out["bind"] += bind.bit_count()
            out["any"] += (dial | bind).bit_count()
            out["usable"] += ((dial | bind) & self._usable(row) & ~self.refused(row)).bit_count()
            out["posture_fails"] += self.refused(row).bit_count()
        return out

    def rows(self) -> list[dict]:
        """Every pair with access as a plain dict (identity, service, dial, bind, routers)."""
        return [{"identity": i, "service": s, **self[i, s]} for i, s in self]

    def codes(self):
        """A numpy array (identities x services): 1 dial, 2 bind, 3 both; plus 4 when an edge router is
        shared, plus 8 when known posture refuses every allowed type."""
        import numpy as np

        size, columns = len(self._svcs), np.asarray(self._columns, dtype=np.intp)
        cache: dict[int, Any] = {}

        def unpack(mask: int):
            if mask not in cache:
                raw = np.frombuffer(mask.to_bytes((size + 7) // 8 or 1, "little"), dtype=np.uint8)
                cache[mask] = np.unpackbits(raw, bitorder="little")[:size][columns].astype(np.int8)
            return cache[mask]

        out = np.zeros((len(self.identities), len(self.services)), dtype=np.int8)
        for row, (dial, bind) in enumerate(self._rows):
            if dial | bind:
                out[row] = (
                    unpack(dial)
                    + 2 * unpack(bind)
                    + 4 * unpack((dial | bind) & self._usable(row))
                    + 8 * unpack(self.refused(row))
                )
        return out

    def frame(self, with_routers: bool = False):
        """A pandas DataFrame: identity rows, service columns, "D", "B", "DB" or "".

        With ``with_routers``, lower case when no edge router is shared and a "!" when posture refuses.
        """
        import numpy as np

        pd = pandas()
        base = ["", "D", "B", "DB"]
        if with_routers:
            marks = [
                ("" if c & 3 == 0 else base[c & 3] if c & 4 else base[c & 3].lower()) + ("!" if c & 8 else "")
                for c in range(16)
            ]
        else:
            marks = base * 4
        marks = np.array(marks, dtype=object)
        return pd.DataFrame(
            marks[self.codes()],
            index=pd.Index(self.identities, name="identity"),
            columns=pd.Index(self.services, name="service"),
        )

    def long_frame(self):
        """A pandas DataFrame with one row per pair with access."""
        pd = pandas()
        rows = [{**row, "routers": len(row["routers"])} for row in self.rows()]
        return pd.DataFrame(rows, columns=["identity", "service", "dial", "bind", "routers"])


@dataclass
class AccessDiff:
    """Who gains and loses which access between two network states."""

    gained: list[tuple[str, str, str]]  # (identity, service, type)
    lost: list[tuple[str, str, str]]
    connected: list[tuple[str, str]] = field(default_factory=list)  # now allowed and sharing an edge router
    disconnected: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.gained or self.lost or self.connected or self.disconnected)

    def rows(self) -> list[dict]:
        out = [{"identity": i, "service": s, "type": t, "change": "gained"} for i, s, t in self.gained]
        out += [{"identity": i, "service": s, "type": t, "change": "lost"} for i, s, t in self.lost]
        out += [{"identity": i, "service": s, "type": "usable", "change": "gained"} for i, s in self.connected]
        out += [{"identity": i, "service": s, "type": "usable", "change": "lost"} for i, s in self.disconnected]
        return out

    def lines(self) -> list[str]:
        if not self:
            return ["no change in access"]
        out = [f"+ {i} may {t.lower()} {s}" for i, s, t in self.gained]
        out += [f"- {i} may no longer {t.lower()} {s}" for i, s, t in self.lost]
        out += [f"+ {i} can now reach {s} over an edge router" for i, s in self.connected]
        out += [f"- {i} can no longer reach {s} over an edge router" for i, s in self.disconnected]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def frame(self):
        return pandas().DataFrame(self.rows(), columns=["identity", "service", "type", "change"])


def access_diff(before: Analysis, after: Analysis) -> AccessDiff:
    """Who gains and loses which access between two network states."""
    old_ids, new_ids = before.populations["identities"], after.populations["identities"]
    old_svcs, new_svcs = before.populations["services"], after.populations["services"]
    same_services = old_svcs.names == new_svcs.names
    changes: dict[str | None, tuple[list, list]] = {kind: ([], []) for kind in (*TYPES, USABLE)}
    for identity in sorted(set(old_ids.names) | set(new_ids.names)):
        for kind, (gained, lost) in changes.items():
            old = _mask(before, old_ids.index.get(identity), kind)
            new = _mask(after, new_ids.index.get(identity), kind)
            if same_services and old == new:
                continue
            old_names, new_names = set(old_svcs.names_of(old)), set(new_svcs.names_of(new))
            gained += [(identity, service) for service in sorted(new_names - old_names)]
            lost += [(identity, service) for service in sorted(old_names - new_names)]
    return AccessDiff(
        sorted((i, s, t) for t in TYPES for i, s in changes[t][0]),
        sorted((i, s, t) for t in TYPES for i, s in changes[t][1]),
        *changes[USABLE],
    )


def _mask(analysis: Analysis, identity: int | None, kind: str | None) -> int:
    if identity is None:
        return 0
    return analysis.usable_mask(identity) if kind is USABLE else analysis.services_mask(identity, kind)


__all__ = ["AccessDiff", "AccessMatrix", "access_diff"]
