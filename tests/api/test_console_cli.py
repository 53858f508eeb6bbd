"""``python -m controller --console DIR``: the folder is checked before anything starts, then served at /zac/."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from harness.processes.server import free_port

ROOT = Path(__file__).resolve().parents[2]
INDEX = b"<!doctype html><title>zac</title>"


def controller(*args: str, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "controller", "--log-level", "warning", "--no-router", *args]
    return command, {"env": env, "cwd": ROOT, **kwargs}


def test_a_folder_without_an_index_is_one_line_and_exit_2(tmp_path):
    command, options = controller("--temp", "--console", str(tmp_path / "nope"))
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, **options)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr
    assert "--console" in lines[0] and "index.html" in lines[0]


def test_the_folder_is_served_at_zac_over_https(tmp_path):
    folder = tmp_path / "zac"
    folder.mkdir()
    (folder / "index.html").write_bytes(INDEX)
    port, ready = free_port(), tmp_path / "ready.json"
    command, options = controller(
        "--temp", "--console", str(folder), "--port", str(port), "--no-http", "--ctrl-port", "0", "--ready-file", ready
    )
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options)
    try:
        # NOTE: connect once it is ready: a refused connect may escape httpx's exception mapping once an in-process
        # pytester run has dropped httpcore from sys.modules (then this worker's map holds the old classes)
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)  # another process's file: no clock to advance
        assert ready.exists(), process.stderr.read() if process.poll() is not None else "not ready"
        with httpx.Client(verify=False, timeout=30) as http:  # noqa: S501 - the temporary folder's own CA
            response = http.get(f"https://127.0.0.1:{port}/zac/services/advanced/create")
        assert response.status_code == 200 and response.content == INDEX
        assert response.headers["cache-control"] == "no-cache"
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert f"console: https://127.0.0.1:{port}/zac/" in out.decode()
