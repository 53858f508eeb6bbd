"""Owner-only folders and files for what the harness keeps on disk (``--data``, enrollment JWTs).

APPSEC(secrets-at-rest): a data folder holds live tokens and keys, an enrollment
JWT is a credential until used. Folders are 0700 and files 0600 whatever the
umask; the controller repairs the inside of its data folder itself at start.
"""

from __future__ import annotations

import os
from pathlib import Path


def private_folder(path: str | os.PathLike) -> Path:
    """``path`` (and any parents it creates) as a 0700 folder; an existing folder is made 0700 too."""
    folder = Path(path)
    missing = []
    probe = folder
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for created in reversed(missing):
        created.mkdir(mode=0o700, exist_ok=True)
        os.chmod(created, 0o700)
    if not missing and folder.is_dir():
        os.chmod(folder, 0o700)
    return folder


def write_private(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to a file created (or reset to) 0600."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
