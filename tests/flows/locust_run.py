"""A headless Locust master and one worker, run as subprocesses (the flows' Locust tests share it).

Locust is never imported here: it patches the standard library for gevent.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from harness.processes.server import free_port


def locust_run(
    locustfile: str, host: str, folder: Path, *, users: int, seconds: int, master=(), worker=()
) -> dict[str, dict]:
    """Run ``users`` Locust users of ``locustfile`` against ``host`` for ``seconds`` on one worker.

    Args:
        master: options only the master takes (the file's own options reach the workers from it).
        worker: options the worker takes too.

    Returns:
        The run's statistics rows (``run_stats.csv``) by their ``Name``.

    Raises:
        RuntimeError: the master did not end well; its output and the worker's log say why.
    """
    port = free_port()
    common = [sys.executable, "-m", "locust", "-f", locustfile, "--host", host]
    timing = ["-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--stop-timeout", "2"]
    runner = subprocess.Popen(
        [*common, "--headless", "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
        + ["--expect-workers", "1", *timing, "--only-summary", "--csv", str(folder / "run"), *master, *worker],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log = folder / "worker.log"
    with open(log, "w") as out:
        helper = subprocess.Popen(
            [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), *worker],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        output, _ = runner.communicate(timeout=90)
    finally:
        for process in (runner, helper):
            process.kill()
            process.wait(10)
    if runner.returncode != 0:
        raise RuntimeError(output[-2000:] + log.read_text()[-3000:])
    with open(folder / "run_stats.csv") as stats:
        rows = {row["Name"]: row for row in csv.DictReader(stats)}
    if not rows.keys() - {"Aggregated"}:  # say why (a worker slow to start under load, a failed login...)
        raise RuntimeError(f"no request in {seconds} s:\n" + output[-2000:] + log.read_text()[-3000:])
    return rows
