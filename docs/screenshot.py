"""Take docs/explorer.png: the policy explorer notebook as a user sees it, in JupyterLab in headless Chromium.

    pip install -e ".[docs]" && apt-get install -y chromium
    python docs/screenshot.py [OUT.png]

It copies ``notebooks/`` to a temporary folder (so nothing is saved into the
repository's notebooks), starts JupyterLab there on a free local port, opens
``02-policy-explorer.ipynb`` in Chromium, runs the cells down to the explorer
with a live kernel, and screenshots the window. Playwright only drives the
system's Chromium (``--chromium``); it downloads no browser.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from harness.processes.server import free_port

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "02-policy-explorer.ipynb"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def start_lab(folder: Path, port: int, token: str) -> subprocess.Popen:
    """JupyterLab on 127.0.0.1:``port`` serving ``folder``, its settings kept in ``folder`` too."""
    news = folder / ".settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')  # no "would you like news?" toast over the picture
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "JUPYTER_CONFIG_DIR": str(folder / ".config"),
        "JUPYTERLAB_SETTINGS_DIR": str(folder / ".settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(folder / ".ws"),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={folder}",
            "--LabApp.expose_app_in_browser=True",
            "--allow-root",
            # stay offline: no extension manager look-ups, no update checks
            "--LabApp.extension_manager=readonly",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_serving(lab: subprocess.Popen, port: int, timeout: float) -> None:
    """Block until JupyterLab logs that it serves on ``port`` (its log is read, and drained, by a thread)."""
    ready = threading.Event()

    def read() -> None:
        for line in lab.stderr:
            if f"127.0.0.1:{port}/" in line:
                ready.set()
        ready.set()  # the process ended: stop waiting, the check below says so

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(timeout) or lab.poll() is not None:
        raise RuntimeError(f"JupyterLab did not start on port {port} (exit code {lab.poll()})")


#: run the cells above the first cell that scripts clicks (the explorer shows its first state), then wait
RUN_TO_EXPLORER = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.sessionContext.ready;
  const cells = panel.content.widgets;
  const stop = cells.findIndex(c => c.model.sharedModel.getSource().includes('fix_button.click()'));
  panel.content.activeCellIndex = stop;
  await app.commands.execute('notebook:run-all-above');
  app.shell.collapseLeft();
  const explorer = cells[stop - 2];
  explorer.node.scrollIntoView({block: 'start'});
  return stop;
}"""


def shoot(out: Path, *, chromium: str, width: int = 1360, height: int = 1000, timeout: float = 240) -> Path:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copytree(ROOT / "notebooks", folder, dirs_exist_ok=True)
        port, token = free_port(), secrets.token_hex(16)
        lab = start_lab(folder, port, token)
        try:
            wait_until_serving(lab, port, timeout)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK}?token={token}&reset")
                page.wait_for_function(
                    "window.jupyterapp && window.jupyterapp.shell.currentWidget "
                    "&& window.jupyterapp.shell.currentWidget.sessionContext",
                    timeout=timeout * 1000,
                )
                page.evaluate(RUN_TO_EXPLORER)
                page.wait_for_selector(".widget-dropdown select", timeout=timeout * 1000)
                page.wait_for_function(
                    "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
                    timeout=timeout * 1000,
                )
                page.evaluate(
                    "document.querySelector('.widget-dropdown').closest('.jp-Cell').scrollIntoView({block: 'start'})"
                )
                page.locator(".widget-html-content", has_text="CANNOT dial crm").first.wait_for(state="visible")
                page.screenshot(path=str(out))
                browser.close()
        finally:
            lab.terminate()
            lab.wait(timeout=20)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default=str(Path(__file__).with_name("explorer.png")))
    parser.add_argument(
        "--chromium",
        default=shutil.which("chromium") or "/usr/bin/chromium",
        help="the Chromium executable to drive (default: chromium on PATH)",
    )
    args = parser.parse_args(argv)
    print(shoot(Path(args.out), chromium=args.chromium))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
