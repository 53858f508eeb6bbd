"""The real Admin Console in a real browser: its build from ``REAL_CONSOLE_DIR``, served by the controller's
``--console`` option, driven headless in Debian's Chromium by Playwright (``.ci/run`` sets it up when the build is
at hand; docs/real-clients.md). Without the build, the browser or Playwright, these tests skip with the reason.

One browser and one controller per module (a module's tests share a logged-in page); every test checks that the
console made no request that failed (status >= 400) other than its own known probes, and logged no error, and
keeps a screenshot under its tmp path when it fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CONSOLE_ENV = "REAL_CONSOLE_DIR"
CHROMIUM = "/usr/bin/chromium"

#: (method, path, status) -> why the console's own request fails on a real controller too, and does no harm
KNOWN_FAILURES = {
    ("GET", "/fabric/v1/cluster/list-members", 400): "the login's probe for an HA cluster: a controller alone "
    "answers SERVER_NOT_RUNNING_IN_HA_MODE",
    ("GET", "/fabric/v1/raft/members", 404): "the same probe's second try, a path no real controller serves",
    ("GET", "/edge/management/v1//terminators", 400): "the dashboard's first try, filter=identity, which the real "
    "filter grammar refuses; it then lists the terminators plainly",
    ("GET", "/auth/callback", 404): "the OIDC redirect_uri outside /zac/: the console takes the code from the "
    "redirect, the page itself is never needed",
    ("GET", "/edge/management/v1/identities/undefined/services/", 404): "the identity create form asks for the "
    "services of the identity it has not made yet (and logs the 404 as ERROR {error: undefined})",
    ("GET", "/edge/management/v1/identities/undefined/service-policies/", 404): "the same form, the same way, for "
    "service policies",
}
#: the console error the console logs for each of those 404s of an ``undefined`` id
UNDEFINED_ID_ERROR = "ERROR {error: undefined}"


#: console errors of the console's own code, on any controller: (text it starts with, where) -> why
KNOWN_CONSOLE_ERRORS = {
    ("ERROR TypeError: Cannot read properties of undefined (reading 'then')", "linkClicked"): "console 4.5.1's "
    "auth-policy list: its name link's pre-check returns no promise (the row's own click handler opens the form)",
    ("ERROR TypeError: Cannot read properties of undefined (reading 'cert')", "at template"): "console 4.5.1's "
    "auth-policy form draws primary.cert before its record has loaded (the save that follows sends it whole)",
}


def console_dir() -> Path:
    folder = os.environ.get(CONSOLE_ENV)
    if not folder:
        pytest.skip(f"{CONSOLE_ENV} is unset: set it to the folder of an unpacked Admin Console build (index.html)")
    if not (Path(folder) / "index.html").is_file():
        pytest.fail(f"{CONSOLE_ENV}={folder} has no index.html")
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("playwright is not installed: pip install playwright")
    if not (Path(CHROMIUM).is_file() or shutil.which("chromium")):
        pytest.skip(f"no chromium at {CHROMIUM}: apt-get install chromium")
    return Path(folder)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test, so its fixtures can tell whether it failed."""
    outcome = yield
    setattr(item, f"report_{call.when}", outcome.get_result())


class Watch:
    """Failed requests and console errors of one page, the known ones set aside."""

    def __init__(self, page, origin: str):
        self.page, self.origin = page, origin
        self.failures: list[str] = []
        self.known: list[str] = []
        self.requests: list[tuple[str, str, int]] = []
        self._undefined_ids = 0  # known 404s of an ``undefined`` id not yet matched by their console error
        page.on("response", self._response)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.failures.append(f"page error: {error}"))

    def _local(self, url: str) -> bool:
        return url.startswith(self.origin)

    def _key(self, method: str, url: str, status: int) -> tuple[str, str, int]:
        return method, urlsplit(url).path, status

    def _response(self, response) -> None:
        request = response.request
        if not self._local(response.url):
            return
        key = self._key(request.method, response.url, response.status)
        self.requests.append(key)
        if response.status >= 400:
            (self.known if key in KNOWN_FAILURES else self.failures).append(
                f"{request.method} {response.url.removeprefix(self.origin)} -> {response.status}"
            )
            if key in KNOWN_FAILURES and "/undefined/" in key[1]:
                self._undefined_ids += 1

    def _console(self, message) -> None:
        if message.type != "error":
            return
        url = message.location.get("url", "")
        if url and not self._local(url):  # map tiles and the icon font: no internet here
            return
        if message.text.startswith("Failed to load resource"):  # the response handler judged that request
            return
        if message.text == UNDEFINED_ID_ERROR and self._undefined_ids > 0:
            self._undefined_ids -= 1
            self.known.append(message.text)
            return
        for (start, where), _why in KNOWN_CONSOLE_ERRORS.items():
            if message.text.startswith(start) and where in message.text:
                self.known.append(message.text[:200])
                return
        self.failures.append(f"console error: {message.text[:300]}")

    def since(self, mark: int) -> list[tuple[str, str, int]]:
        return self.requests[mark:]

    def check(self, shot: Path) -> None:
        failures, self.failures = self.failures, []
        if failures:
            self.page.screenshot(path=str(shot), full_page=True)
            pytest.fail(f"the console failed ({len(failures)}), screenshot {shot}:\n" + "\n".join(failures))
