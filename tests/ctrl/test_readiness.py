"""Readiness without parsing logs: ``--ready-file`` (controller and process router) and one ready line."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys

import httpx

from harness.processes.routers import ROOT, router_command
from harness.processes.server import free_port
from tests.ctrl.support import run_router, wait_until


def test_the_controller_writes_its_ready_file_once_admin_usable_with_its_router_online(tmp_path):
    ready = tmp_path / "state" / "ready.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "controller", "--data", str(tmp_path / "data"), "--port", str(free_port())]
        + ["--http-port", "0", "--router-port", "0", "--ctrl-port", "0", "--ready-file", str(ready)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_until(lambda: ready.exists() or process.poll() is not None, what="the ready file")
        content = json.loads(ready.read_text())
        assert stat.S_IMODE(ready.stat().st_mode) == 0o600
        assert content["pid"] == process.pid and content["ctrl"].startswith("tls:127.0.0.1:")
        with httpx.Client(base_url=content["https"] + "/edge/management/v1", verify=False) as client:
            login = client.post(
                "/authenticate", params={"method": "password"}, json={"username": "admin", "password": "admin"}
            )
            routers = client.get("/edge-routers", headers={"zt-session": login.json()["data"]["token"]}).json()
        [router] = routers["data"]
        assert router["isOnline"] and router["supportedProtocols"] == {"tls": content["router"]}
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=20)
    [line] = [line for line in out.splitlines() if line.startswith("ready:")]
    assert content["https"] in line and "edge router online at " + content["router"] in line


def test_a_busy_ctrl_port_names_the_port_and_the_option(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "controller", "--data", str(tmp_path / "data"), "--port", str(free_port())]
            + ["--http-port", "0", "--no-router", "--ctrl-port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 4
    assert done.stderr.strip() == (
        f"error: control channel port {port} on 127.0.0.1 is in use; stop what uses it or pick another port "
        "with --ctrl-port PORT"
    )


def test_a_process_router_writes_its_ready_file_owner_only_and_goes_offline_when_stopped(make_router, timeline):
    router = make_router()
    assert stat.S_IMODE(router.ready_file.stat().st_mode) == 0o600
    assert router.ready == {
        "routerId": router.id,
        "name": router.name,
        "url": router.edge_listing()["supportedProtocols"]["tls"],
    }
    assert router.stop() == 0  # SIGTERM: the router says offline itself, and exits 0
    timeline.wait("router", "offline", router_id=router.id, timeout=5)
    assert not router.edge_listing()["isOnline"]
    assert "ready at " + router.ready["url"] in router.log.read_text()


def test_the_router_command_line_documents_every_option():
    done = run_router("run", "--help")
    assert done.returncode == 0 and "--ready-file" in done.stdout and "exit codes:" in done.stdout
    usage = run_router("fly")
    assert usage.returncode == 2


def test_run_with_wait_comes_online_once_the_control_channel_listens(network, make_router):
    from controller.server.serve import ctrl_listener

    router = make_router(start=False)
    port = free_port()
    config = router.data_dir / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "ctrl": f"tls:127.0.0.1:{port}"}))
    waiting = subprocess.Popen(
        router_command("run", "--data", str(router.data_dir), "--wait", "30", "--ready-file", str(router.ready_file)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    router.proc = waiting  # stopped by the fixture
    assert waiting.stdout.readline().startswith("waiting up to 30 s for the controller: cannot reach")
    listener = ctrl_listener(network.controller, "127.0.0.1", port).start()  # only now
    try:
        wait_until(lambda: router.ready_file.exists() or waiting.poll() is not None, what="the waiting router ready")
        assert waiting.poll() is None and router.edge_listing()["isOnline"]
    finally:
        router.stop()
        listener.stop()
