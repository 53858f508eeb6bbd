"""The reference operation tables kept in ``fixtures/operations`` (read as data, never the official documents)."""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "operations"


def load(name: str) -> list[dict]:
    return json.loads((FOLDER / name).read_text())


#: every operation of the real APIs: {api, operationId, method, path, auth}, those not served marked
#: ``"served": false`` with the reason in ``why``
ALL_REFERENCE = load("reference.json")
#: the real operations this controller serves
REFERENCE = [row for row in ALL_REFERENCE if row.get("served", True)]
#: the real operations it does not serve, each with the reason
NOT_SERVED = [row for row in ALL_REFERENCE if not row.get("served", True)]
#: what this controller serves beyond them, with the reason
EXTRAS = load("extras.json")
#: the extras served in every mode (the others only in simulation mode)
ALWAYS = [row for row in EXTRAS if row.get("always")]


def for_api(api: str, rows=REFERENCE) -> list[dict]:
    return [row for row in rows if row["api"] == api]
