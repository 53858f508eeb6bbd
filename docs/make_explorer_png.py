"""Render docs/explorer.png: the policy explorer's state, headless (``python docs/make_explorer_png.py``).

The picture is what :meth:`harness.notebook.PolicyExplorer.figure` draws for the
company sample network after a few clicks: the same code the notebook runs.
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.notebook import PolicyExplorer, sample_network

#: what the staff's devices reported (see notebooks/02-policy-explorer.ipynb)
POSTURE = {
    "ana.sales": {"domain": "corp.example", "os": {"type": "Windows", "version": "10.0.19045"}},
    "ben.sales": {"domain": "corp.example", "os": {"type": "Linux", "version": "6.8"}},
    "cara.finance": {"domain": "corp.example", "os": {"type": "macOS", "version": "14.4"}},
}


def render(path: Path) -> Path:
    explorer = PolicyExplorer(sample_network("company"), posture=POSTURE)
    explorer.identity.value = "ben.sales"
    explorer.service.value = "crm"
    explorer.figure().savefig(path, dpi=80)
    return path


if __name__ == "__main__":
    print(render(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("explorer.png")))
