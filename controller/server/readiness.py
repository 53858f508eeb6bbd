"""Readiness: one line and, on request, a file a harness waits on instead of parsing logs.

The controller is ready once its listeners serve (the admin API answers) and its embedded
router, if any, is online (``EdgeRouter.start`` returns after the router reported itself online).
The file is JSON with the addresses, written atomically (a reader sees no file or all of it)
and owner-only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

#: when this module was first imported: close to the process start, for the ready line's figure
_IMPORTED = time.monotonic()


def ready_content(config, https_port: int | None, http_port: int | None, router=None) -> dict:
    host = config.api_address.rsplit(":", 1)[0]
    return {
        "pid": os.getpid(),
        "https": f"https://{host}:{https_port}" if https_port else None,
        "http": f"http://{config.host}:{http_port}" if http_port else None,
        "router": router.url if router is not None else None,
        "ctrl": config.ctrl_address,
    }


def write_ready_file(path: str | Path, content: dict) -> None:
    """Atomically and owner-only: a temporary file beside it, then a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(content, out)
    os.replace(temporary, path)


def announce_ready(config, group, router, ready_file: str | None) -> dict:
    """Print the ready line and write ``ready_file``; returns what was written."""
    content = ready_content(config, group.port("HTTPS"), group.port("HTTP"), router)
    if ready_file:
        write_ready_file(ready_file, content)
    online = f", edge router online at {router.url}" if router is not None else ""
    print(f"ready: {content['https']} admin-usable{online} ({time.monotonic() - _IMPORTED:.2f} s)", flush=True)
    return content
