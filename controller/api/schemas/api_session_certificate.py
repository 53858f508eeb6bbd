"""API session certificates: the CSR an API session signs."""

from __future__ import annotations

from controller.model import schema as s

CREATE = s.obj({"csr": s.string()}, required=("csr",))
