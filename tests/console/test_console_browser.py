"""The real Admin Console 4.5.1 in headless Chromium against this controller (issue 31).

Logins both ways, every list page, the dashboard's router count, and edits saved through the console's own forms,
``intercept.v1`` and ``host.v1`` configs included. ``conftest.Watch`` fails a test on any request that failed or
console error beyond the console's known probes.
"""

from __future__ import annotations

import re

import pytest

from controller.config import VERSION
from harness.client import ZitiClient
from harness.processes.server import LocalController
from tests.console.conftest import CHROMIUM, Watch, console_dir

INTERCEPT = {"protocols": ["tcp"], "addresses": ["web.ziti"], "portRanges": [{"low": 80, "high": 80}]}
HOST = {"protocol": "tcp", "address": "127.0.0.1", "port": 8080}
AUTH_POLICY = {
    "name": "strict",
    "primary": {
        "cert": {"allowed": True, "allowExpiredCerts": True},
        "extJwt": {"allowed": False, "allowedSigners": []},
        "updb": {
            "allowed": True,
            "lockoutDurationMinutes": 0,
            "maxAttempts": 5,
            "minPasswordLength": 5,
            "requireMixedCase": False,
            "requireNumberChar": False,
            "requireSpecialChar": False,
        },
    },
    "secondary": {"requireTotp": False},
}
#: entity kind -> (list page, a record's name, the management collection its save writes)
DETAILS = {
    "identity": ("identities", "alice", "identities"),
    "service": ("services", "web", "services"),
    "edge router": ("routers", "quickstart-router", "edge-routers"),
    "service policy": ("service-policies", "web-dial", "service-policies"),
    "edge router policy": ("router-policies", "all-endpoints-public-routers", "edge-router-policies"),
    "service edge router policy": (
        "service-router-policies",
        "all-routers-all-services",
        "service-edge-router-policies",
    ),
    "posture check": ("posture-checks", "mfa-check", "posture-checks"),
    "auth policy": ("auth-policies", "strict", "auth-policies"),
    "config type": ("config-types", "port.v1", "config-types"),
}
#: list pages (one level deep: a full load of a deeper path has the console resolve its assets under it)
LIST_PAGES = {
    "identities": "Default Admin",
    "services": "web",
    "routers": "quickstart-router",
    "transit-routers": None,
    "service-policies": "web-dial",
    "router-policies": "all-endpoints-public-routers",
    "service-router-policies": "all-routers-all-services",
    "posture-checks": None,
    "certificate-authorities": None,
    "jwt-signers": None,
    "auth-policies": "Default",
    "sessions": None,
    "api-sessions": None,
    "configs": "web-intercept",
    "config-types": "intercept.v1",
    "terminators": None,
    "network-visualizer": None,
    "settings": None,
    "profile": None,
}


@pytest.fixture(scope="module")
def folder():
    return console_dir()


@pytest.fixture(scope="module")
def browser(folder):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def controller(folder, *, oidc: bool) -> LocalController:
    local = LocalController(router=True, quickstart_policies=True)
    local.config.console_dir = folder
    local.config.oidc = oidc
    return local


@pytest.fixture(scope="module")
def network(folder):
    """A controller with its router and a little of everything the pages list."""
    with controller(folder, oidc=True) as local, ZitiClient.connect(local.url) as admin:
        admin.login("admin", "admin")
        service = admin.create("services", {"name": "web", "roleAttributes": ["web"], "encryptionRequired": True})
        admin.create(
            "service-policies",
            {
                "name": "web-dial",
                "type": "Dial",
                "semantic": "AnyOf",
                "serviceRoles": [f"@{service}"],
                "identityRoles": ["#web-clients"],
            },
        )
        admin.create("configs", {"name": "web-intercept", "configTypeId": "g7cIWbcGg", "data": INTERCEPT})
        admin.create("configs", {"name": "web-host", "configTypeId": "NH5p4FpGR", "data": HOST})
        admin.create("edge-routers", {"name": "spare-router", "roleAttributes": ["spare"]})
        admin.create(
            "identities",
            {
                "name": "alice",
                "type": "User",
                "isAdmin": False,
                "roleAttributes": ["web-clients"],
                "enrollment": {"ott": True},
            },
        )
        admin.create("services", {"name": "old-service", "encryptionRequired": True})
        admin.create("service-policies", {"name": "old-policy", "type": "Bind", "semantic": "AnyOf"})
        admin.create("configs", {"name": "old-config", "configTypeId": "g7cIWbcGg", "data": INTERCEPT})
        for name in ("carol", "dave"):
            admin.create("identities", {"name": name, "type": "User", "isAdmin": False, "enrollment": {"ott": True}})
        admin.create("posture-checks", {"name": "mfa-check", "typeId": "MFA", "roleAttributes": ["web-clients"]})
        admin.create("auth-policies", AUTH_POLICY)
        admin.create(
            "config-types",
            {"name": "port.v1", "schema": {"type": "object", "properties": {"port": {"type": "integer"}}}},
        )
        yield local, admin


class Console:
    """A browser page logged in to the console, with its watch."""

    def __init__(self, browser, local):
        self.origin = local.https_url
        self.context = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)  # a CI machine is busy: four workers, each with its own browser
        self.watch = Watch(self.page, self.origin)

    def login(self) -> None:
        self.page.goto(self.origin + "/zac/")
        self.page.fill("#Username", "admin")
        self.page.fill("#Password", "admin")
        self.page.click("text=LOG IN")
        self.page.wait_for_url("**/zac/dashboard")
        self.page.wait_for_load_state("networkidle")

    def open(self, route: str) -> None:
        """Load ``/zac/<route>``; again (bounded) when the console's own navigation, a list it returns to after a
        save, aborts the load or replaces the page."""
        from playwright.sync_api import Error

        target = f"{self.origin}/zac/{route}"
        for attempt in range(4):
            self.page.wait_for_load_state("networkidle")
            try:
                self.page.goto(target)
                self.page.wait_for_load_state("networkidle")
            except Error as ex:
                if "ERR_ABORTED" not in str(ex) or attempt == 3:
                    raise
                continue
            self.page.wait_for_timeout(300)  # a navigation the console had queued shows by now
            if self.page.url == target:
                return
        raise AssertionError(f"the console left {target} for {self.page.url}")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def console(browser, network):
    local, _ = network
    page = Console(browser, local)
    page.login()
    yield page
    page.close()


@pytest.fixture(autouse=True)
def no_failures(request, tmp_path):
    """Every test ends with the watch of each console it used checked (a screenshot kept when it fails)."""
    used: list[Console] = []
    request.node.consoles = used
    yield
    report = getattr(request.node, "report_call", None)
    for index, page in enumerate(used):
        shot = tmp_path / f"console-{index}.png"
        if report is not None and report.failed:  # a failed step: keep what the page showed
            page.page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failed test's console: {shot}")
        page.watch.check(shot)


def use(request, page: Console) -> Console:
    request.node.consoles.append(page)
    return page


def test_login_by_oidc_lands_on_the_dashboard_with_the_router_count(request, console, network):
    page = use(request, console)
    _, admin = network
    assert ("POST", "/oidc/oauth/token", 200) in page.watch.requests
    assert not [r for r in page.watch.requests if r[1].endswith("/authenticate")]
    page.open("dashboard")
    count = page.page.locator(".entity-chip.router-chip .entity-count").first.inner_text()
    assert int(count) == len(admin.mgmt_ok("GET", "/edge-routers", params={"limit": -1})) == 2
    assert "Controller: 2.0.3" in page.page.locator("body").inner_text()


def test_legacy_login_when_the_controller_has_no_oidc(request, browser, folder):
    with controller(folder, oidc=False) as local:
        page = use(request, Console(browser, local))
        try:
            page.login()
            assert ("POST", "/edge/management/v1/authenticate", 200) in page.watch.requests
            assert not [r for r in page.watch.requests if r[1].startswith("/oidc/")]
        finally:
            page.close()


@pytest.mark.parametrize("route", sorted(LIST_PAGES))
def test_each_list_page_renders(request, console, route):
    page = use(request, console)
    page.open(route)
    expected = LIST_PAGES[route]
    if expected:
        page.page.get_by_text(expected, exact=True).first.wait_for()


@pytest.mark.parametrize(("name", "edit"), [("web-intercept", "udp"), ("web-host", None)])
def test_a_config_edited_in_the_console_saves(request, console, network, name, edit):
    page = use(request, console)
    _, admin = network
    page.open("configs")
    page.page.get_by_text(name, exact=True).first.click()
    page.page.wait_for_url(re.compile(r".*/zac/configs/[^/]+$"))
    page.page.wait_for_load_state("networkidle")
    config_id = page.page.url.rsplit("/", 1)[1]
    if edit:
        page.page.locator(f"div:has(> span.boxlabel:text-is('{edit}')) > input[type=checkbox]").first.click()
    with page.page.expect_response(
        lambda r: f"/configs/{config_id}" in r.url and r.request.method in ("PUT", "PATCH")
    ) as saved:
        page.page.locator(".save-button").first.click()
    assert saved.value.status == 200, saved.value.text()
    data = admin.mgmt_ok("GET", f"/configs/{config_id}")["data"]
    if edit:
        assert data["protocols"] == ["tcp", "udp"]
    else:
        assert {k: data[k] for k in HOST} == HOST


@pytest.mark.parametrize("kind", sorted(DETAILS))
def test_one_detail_of_each_kind_saves_unchanged(request, console, kind):
    page = use(request, console)
    route, name, collection = DETAILS[kind]
    page.open(route)
    page.page.get_by_text(name, exact=True).first.click()
    page.page.wait_for_url(re.compile(rf".*/zac/{route}/(advanced/)?[^/]+$"))
    page.page.wait_for_load_state("networkidle")
    record_id = page.page.url.rsplit("/", 1)[1]

    def is_save(response) -> bool:
        return f"/{collection}/{record_id}" in response.url and response.request.method in ("PUT", "PATCH")

    with page.page.expect_response(is_save) as saved:
        page.page.locator(".save-button").first.click()
    assert saved.value.status == 200, saved.value.text()
    page.page.wait_for_load_state("networkidle")


def row_action(page: Console, name: str, action: str) -> None:
    """Open a list row's ``...`` menu (the grid's pinned column, matched by row index) and choose ``action``."""
    index = page.page.locator(".ag-row", has_text=name).first.get_attribute("row-index")
    page.page.locator(f".ag-row[row-index='{index}'] .dots").first.click()
    page.page.locator(".tActionRow:visible", has_text=action).first.click()


def confirm(page: Console, label: str) -> None:
    page.page.locator(f"text=/^\\s*{label}\\s*$/i").locator("visible=true").first.click()


def test_an_identity_created_through_the_form(request, console, network):
    page = use(request, console)
    _, admin = network
    page.open("identities")
    page.page.locator(".icon-add").first.click()
    page.page.wait_for_url("**/zac/identities/create")
    page.page.get_by_placeholder("Name this identity").fill("bob")
    with page.page.expect_response(lambda r: r.url.endswith("/identities") and r.request.method == "POST") as made:
        page.page.locator(".save-button").first.click()
    assert made.value.status == 201, made.value.text()
    [bob] = admin.mgmt_ok("GET", "/identities", params={"filter": 'name = "bob"'})
    assert bob["enrollment"]["ott"]["jwt"]  # the form's default: a one-time token


def test_identity_actions_reissue_enrollment_and_delete(request, console, network):
    page = use(request, console)
    _, admin = network
    [carol] = admin.mgmt_ok("GET", "/identities", params={"filter": 'name = "carol"'})
    before = carol["enrollment"]["ott"]["jwt"]
    page.open("identities")
    row_action(page, "carol", "Reissue Enrollment")
    with page.page.expect_response(lambda r: "/enrollments" in r.url and r.request.method == "POST") as reissued:
        confirm(page, "submit")
    assert reissued.value.status < 300, reissued.value.text()
    [carol] = admin.mgmt_ok("GET", "/identities", params={"filter": 'name = "carol"'})
    assert carol["enrollment"]["ott"]["jwt"] != before

    page.open("identities")
    row_action(page, "dave", "Delete")
    with page.page.expect_response(lambda r: "/identities/" in r.url and r.request.method == "DELETE") as deleted:
        page.page.locator(".confirm-buttons-container button.confirm").first.click()
    assert deleted.value.status == 200, deleted.value.text()
    assert admin.mgmt_ok("GET", "/identities", params={"filter": 'name = "dave"'}) == []


def test_the_simple_service_wizard_makes_a_service_whose_configs_then_save(request, console, network):
    page = use(request, console)
    _, admin = network
    page.open("services")
    page.page.locator(".icon-add").first.click()
    page.page.wait_for_url("**/zac/services/select")
    page.page.get_by_text(re.compile("simple", re.I)).first.click()
    page.page.wait_for_url("**/zac/services/simple")
    # typed, not filled: the wizard names the configs and policies after the service on each key
    page.page.get_by_placeholder("Name this service").press_sequentially("shop")
    access = page.page.get_by_placeholder("Select identity attributes to grant access")
    access.fill("shop-clients")
    access.press("Enter")
    page.page.locator("#HowTo").fill("shop.ziti")
    page.page.locator("#HowToPort").press_sequentially("443")
    hosts = page.page.get_by_placeholder("Select identity attributes", exact=True)
    hosts.fill("shop-hosts")
    hosts.press("Enter")
    page.page.locator("#HostedHost").fill("127.0.0.1")
    page.page.locator("#HostedPort").press_sequentially("8443")

    def bind_policy_made(response) -> bool:
        return response.url.endswith("/service-policies") and "Bind" in (response.request.post_data or "")

    with page.page.expect_response(bind_policy_made) as made:
        page.page.locator(".save-button").first.click()
    assert made.value.status == 201, made.value.text()
    page.page.wait_for_load_state("networkidle")

    [service] = admin.mgmt_ok("GET", "/services", params={"filter": 'name = "shop"'})
    configs = [admin.mgmt_ok("GET", f"/configs/{config_id}") for config_id in service["configs"]]
    by_type = {c["configType"]["name"]: c for c in configs}
    assert by_type["intercept.v1"]["data"]["addresses"] == ["shop.ziti"]
    assert by_type["host.v1"]["data"]["address"] == "127.0.0.1" and by_type["host.v1"]["data"]["port"] == 8443
    policies = admin.mgmt_ok("GET", "/service-policies", params={"filter": 'name contains "shop-"'})
    assert {(p["type"], tuple(p["serviceRoles"])) for p in policies} == {
        ("Dial", (f"@{service['id']}",)),
        ("Bind", (f"@{service['id']}",)),
    }

    for config in by_type.values():  # what the wizard made saves from the config editor
        page.open("configs")
        page.page.get_by_text(config["name"], exact=True).first.click()
        page.page.wait_for_url(re.compile(r".*/zac/configs/[^/]+$"))
        page.page.wait_for_load_state("networkidle")

        def is_save(response, config_id=config["id"]) -> bool:
            return f"/configs/{config_id}" in response.url and response.request.method in ("PUT", "PATCH")

        with page.page.expect_response(is_save) as saved:
            page.page.locator(".save-button").first.click()
        assert saved.value.status == 200, saved.value.text()
        page.page.wait_for_load_state("networkidle")


def test_the_routers_page_shows_each_online_routers_version(request, console):
    page = use(request, console)
    page.open("routers")
    page.page.get_by_text("quickstart-router", exact=True).first.wait_for()
    index = page.page.locator(".ag-row", has_text="quickstart-router").first.get_attribute("row-index")
    row = " ".join(cell.inner_text() for cell in page.page.locator(f".ag-row[row-index='{index}']").all())
    assert VERSION.removeprefix("v") in row  # the "Router Version" column (versionInfo.version)


@pytest.mark.parametrize(
    ("route", "name", "collection"),
    [
        ("services", "old-service", "services"),
        ("service-policies", "old-policy", "service-policies"),
        ("configs", "old-config", "configs"),
    ],
)
def test_a_record_deleted_from_its_list(request, console, network, route, name, collection):
    page = use(request, console)
    _, admin = network
    page.open(route)
    page.page.get_by_text(name, exact=True).first.wait_for()
    row_action(page, name, "Delete")
    with page.page.expect_response(lambda r: f"/{collection}/" in r.url and r.request.method == "DELETE") as deleted:
        page.page.locator(".confirm-buttons-container button.confirm").first.click()
    assert deleted.value.status == 200, deleted.value.text()
    assert admin.mgmt_ok("GET", f"/{collection}", params={"filter": f'name = "{name}"'}) == []
