"""Owner-only files: everything the controller writes under its data folder is 0600, every folder 0700.

APPSEC(secrets-at-rest): the data folder holds live API-session and enrollment
tokens, TOTP secrets and password hashes (journal, snapshots, events), and the
PKI's private keys. Modes are set explicitly (``fchmod``/``chmod``), never left to
the umask, so a umask of 0o022 or 0o002 changes nothing. :func:`repair` makes an
existing folder (one written before this rule, or touched by hand) owner-only
at start and says so in one log line.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("controller.files")

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def make_folder(path: str | os.PathLike) -> Path:
    """Create ``path`` and any missing parents 0700 (an existing folder is left as it is)."""
    folder = Path(path)
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for created in reversed(missing):
        try:
            os.mkdir(created, FOLDER_MODE)
        except FileExistsError:
            if not created.is_dir():
                raise
            continue
        os.chmod(created, FOLDER_MODE)  # the umask may have cleared owner bits; never added others
    if not missing and not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    return folder


def open_fd(path: str | os.PathLike, flags: int) -> int:
    """``os.open`` creating the file 0600 whatever the umask (an existing file keeps its mode)."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077 and flags & (os.O_WRONLY | os.O_RDWR):
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def open_private(path: str | os.PathLike, mode: str = "wb", buffering: int = -1):
    """A binary file object like ``open(path, mode)`` ("wb", "ab" or "r+b"), created owner-only."""
    flags = {"wb": os.O_WRONLY | os.O_TRUNC, "ab": os.O_WRONLY | os.O_APPEND, "r+b": os.O_RDWR}[mode]
    fd = open_fd(path, flags)
    try:
        return os.fdopen(fd, mode, buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


#: what the controller (and the harness) keep in a data folder: only these are repaired, so a data folder
#: given as a folder holding other things (``--data ~``) never has those changed
OWNED = ("db", "pki", "snapshots", "identities", "events.jsonl")


def repair(root: str | os.PathLike, owned: tuple[str, ...] = OWNED) -> int:
    """Make ``root`` and what the controller keeps in it (``owned``, and ``events.jsonl.N``) owner-only.

    Returns how many modes were changed. Symbolic links are not followed (a link out of the folder is not
    ours to change).
    """
    fixed, refused = 0, []
    root = Path(root)
    if not root.is_dir():
        return 0
    ours = [root / name for name in os.listdir(root) if name in owned or name.startswith("events.jsonl.")]
    for path in [root, *ours, *(inner for top in ours if top.is_dir() for inner in _walk(top))]:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_IMODE(info.st_mode) & 0o077:
            try:
                os.chmod(path, FOLDER_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE)
            except OSError as ex:  # a read-only folder: nothing can be written there either
                refused.append((path, ex.strerror))
                continue
            fixed += 1
    if refused:
        log.warning(
            "data folder %s: cannot make %d files and folders owner-only (first: %s: %s)",
            root,
            len(refused),
            *refused[0],
        )
    return fixed


def _walk(root: Path):
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            yield Path(folder) / name


def prepare_data_folder(path: str | os.PathLike) -> Path:
    """The data folder, created 0700, with every existing file and folder in it made owner-only (logged once)."""
    folder = make_folder(path)
    fixed = repair(folder)
    if fixed:
        log.warning(
            "data folder %s: %d files and folders were open to group or others; made them owner-only", folder, fixed
        )
    return folder
