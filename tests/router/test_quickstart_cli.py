"""Quickstart defaults: the router and the two policies come with ``up`` and the controller flags."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from controller.app import create_app
from controller.config import Config
from harness.cli import main as harness_main

QUICKSTART = {"all-endpoints-public-routers", "all-routers-all-services"}


def policy_names(ctl) -> set[str]:
    return {
        r["name"] for table in ("edge_router_policies", "service_edge_router_policies") for r in ctl.store.values(table)
    }


def test_a_bare_controller_keeps_only_what_the_real_one_bootstraps():
    app = create_app(Config())
    try:
        assert policy_names(app.controller) == set()
        assert list(app.controller.store.values("routers")) == []
    finally:
        app.controller.close()


def test_harness_up_starts_a_router_and_creates_the_quickstart_policies(tmp_path, capsys):
    code = harness_main(
        [
            "up",
            "--data",
            str(tmp_path / "data"),
            "--port",
            "0",
            "--http-port",
            "0",
            "--router-port",
            "0",
            "--out",
            str(tmp_path / "ids"),
            "--exit-after-start",
        ]
    )
    assert code == 0
    assert "edge router: tls://127.0.0.1:" in capsys.readouterr().out
    app = create_app(Config(data_dir=tmp_path / "data"))
    try:
        assert QUICKSTART <= policy_names(app.controller)
        [router] = list(app.controller.store.values("routers"))
        assert (router["name"], router["is_verified"], router["role_attributes"]) == (
            "quickstart-router",
            True,
            ["public"],
        )
        # the process is gone, so the router is offline and left no terminators
        assert app.controller.routing.router_presence.is_online(router["id"]) is False
    finally:
        app.controller.close()


def run_controller(data, *flags: str) -> list[str]:
    """``python -m controller`` on free ports until its banner, then SIGTERM; its banner lines."""
    process = subprocess.Popen(
        [sys.executable, "-m", "controller", "--data", str(data), "--port", "0", "--http-port", "0", "--ctrl-port", "0"]
        + list(flags),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if "Ctrl-C stops it" in line:
                break
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, "".join(lines)
    return lines


def test_python_m_controller_runs_a_router_until_terminated(tmp_path):
    lines = run_controller(tmp_path / "data", "--router-port", "0", "--quickstart-policies")
    assert any("edge router: tls://127.0.0.1:" in line for line in lines), "".join(lines)
    app = create_app(Config(data_dir=tmp_path / "data"))
    try:
        assert QUICKSTART <= policy_names(app.controller)
    finally:
        app.controller.close()


def test_no_router_flag_starts_none(tmp_path):
    assert not any("edge router" in line for line in run_controller(tmp_path / "data", "--no-router"))


def test_a_busy_router_port_is_named_in_the_error(ziti_quickstart_controller):
    from controller.app import router_link
    from router import EdgeRouter

    busy = int(ziti_quickstart_controller.router.url.rsplit(":", 1)[1])
    link = router_link(ziti_quickstart_controller.controller, name="busy-port-router")
    try:
        with pytest.raises(OSError, match=rf"127\.0\.0\.1:{busy}: .*--router-port"):
            EdgeRouter(link, "127.0.0.1", busy).start()
    finally:
        ziti_quickstart_controller.controller.routing.edge_routers.delete(link.router_id)
