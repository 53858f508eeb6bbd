"""The notebook widgets, headless: set widget values as a person would click, check what they show."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from harness.analysis import Analysis
from harness.network.generate import generate
from harness.network import Network, apply
from harness.notebook import (ExplorerState, MatrixView, Playground, PolicyExplorer, TimelineView, filter_events,
                              run_virtual_clients, sample_network)
from harness.analysis import plots
from harness.analysis.plots import access_heatmap, draw_policy_graph, policy_graph
from harness.analysis.timeline import plot_timeline, timeline_frame

POSTURE = {"ben.sales": {"domain": "corp.example", "os": {"type": "Linux", "version": "6.8"}}}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def company() -> Network:
    return Network.from_yaml(sample_network("company"))


@pytest.fixture
def explorer(company) -> PolicyExplorer:
    explorer = PolicyExplorer(company, posture=POSTURE)
    explorer.identity.value = "eve.contractor"
    explorer.service.value = "crm"
    return explorer


@pytest.fixture
def playground():
    playground = Playground.start(sample_network("company"))
    yield playground
    playground.close()


# -- the policy explorer ------------------------------------------------------------------------
def test_picking_an_identity_and_a_service_shows_the_verdict_and_why(explorer):
    assert "eve.contractor CANNOT dial crm" in explorer.verdict.value
    assert "policy sales-crm" in explorer.explanation.value and "smallest change" in explorer.explanation.value
    explorer.identity.value = "ben.sales"
    assert "allowed, but posture checks fail" in explorer.verdict.value
    assert "supported-os (OS) FAILS" in explorer.explanation.value


def test_switching_to_bind_explains_the_bind_policies(explorer):
    explorer.identity.value = "crm-server"
    explorer.type.value = "Bind"
    assert "crm-server CAN bind crm" in explorer.verdict.value
    assert "hosts-bind-sales" in explorer.explanation.value and "staff-wiki" not in explorer.explanation.value


def test_ticking_an_identity_attribute_grants_and_lists_the_gains(explorer):
    explorer.identity_attrs["sales"].value = True
    assert explorer.state.attrs_of("identities", "eve.contractor") == ["contractors", "sales"]
    assert "eve.contractor CANNOT dial crm: allowed, but posture checks fail" in explorer.verdict.value  # none reported
    assert "+ eve.contractor may dial crm" in explorer.changes.value


def test_the_attribute_boxes_follow_the_chosen_identity(explorer):
    explorer.identity_attrs["sales"].value = True
    explorer.identity.value = "dev.ops"
    assert explorer.identity_attrs["ops"].value is True and explorer.identity_attrs["sales"].value is False
    explorer.identity.value = "eve.contractor"
    assert explorer.identity_attrs["sales"].value is True


def test_unticking_a_service_attribute_takes_access_away(explorer):
    explorer.identity.value = "dev.ops"
    explorer.service.value = "ssh"
    assert "dev.ops CAN dial ssh" in explorer.verdict.value
    explorer.service_attrs["ops-apps"].value = False
    assert "dev.ops CANNOT dial ssh" in explorer.verdict.value
    assert "- dev.ops may no longer dial ssh" in explorer.changes.value


def test_disabling_a_policy_revokes_what_it_granted(explorer):
    explorer.identity.value = "cara.finance"
    explorer.service.value = "wiki"
    explorer.policy_boxes["staff-wiki"].value = False
    assert "CANNOT dial wiki" in explorer.verdict.value
    assert "- ana.sales may no longer dial wiki" in explorer.changes.value
    explorer.policy_boxes["staff-wiki"].value = True
    assert "cara.finance CAN dial wiki" in explorer.verdict.value and "no change in access" in explorer.changes.value


def test_the_fix_button_applies_the_smallest_change_and_reset_undoes_it(explorer):
    assert explorer.fix_button.disabled is False
    explorer.fix_button.click()
    assert "eve.contractor CAN dial crm" in explorer.verdict.value
    assert "+ eve.contractor may dial crm" in explorer.changes.value
    assert "dial-eve.contractor-crm" in explorer.policy_boxes  # the new policy can be switched off like the rest
    explorer.reset_button.click()
    assert "CANNOT" in explorer.verdict.value and "no change in access" in explorer.changes.value


def test_the_fix_button_is_off_when_only_the_device_can_fix_it(explorer):
    explorer.identity.value = "ben.sales"
    assert explorer.fix_button.disabled is True


def test_explorer_state_works_without_widgets(company):
    state = ExplorerState(company)
    state.identity, state.service = "eve.contractor", "ssh"
    assert not state.explanation().allowed
    assert state.apply_fix() and state.explanation().allowed
    assert [(i, s) for i, s, _ in state.changes().gained] == [("eve.contractor", "ssh")]
    state.set_policy("ops-ssh", False)
    assert not state.explanation().allowed and "ops-ssh" in "\n".join(state.controls())


def test_the_explorer_draws_its_state(explorer):
    figure = explorer.figure()
    assert isinstance(figure, plots.Picture) and figure._repr_png_().startswith(b"\x89PNG")


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("chromium") and importlib.util.find_spec("playwright")
                         and importlib.util.find_spec("jupyterlab")), reason="needs chromium, playwright and jupyterlab")
def test_the_readme_screenshot_is_taken_from_jupyterlab(tmp_path):
    spec = importlib.util.spec_from_file_location("screenshot", ROOT / "docs" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = module.shoot(tmp_path / "explorer.png", chromium=shutil.which("chromium"))
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 50_000


# -- the matrix and the graph -----------------------------------------------------------------------
def test_matrix_view_narrows_by_attribute(company):
    view = MatrixView(Analysis(company))
    assert view.summary.value.startswith("7 identities x 5 services")
    view.identity_attr.value = "sales"
    view.service_attr.value = "sales-apps"
    assert view.selection() == (["ana.sales", "ben.sales"], ["crm", "crm-backend"])
    assert view.summary.value.startswith("2 identities x 2 services: 4 dial")
    assert view.figure.axes[0].get_ylabel() == "identities (2)"


def test_heatmap_marks_the_highlighted_cell_and_does_not_call_failing_posture_usable(company):
    analysis = Analysis(company, posture=POSTURE)  # only ben reported, from Linux: every managed pair fails
    figure = access_heatmap(analysis, highlight=("ben.sales", "crm"))
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["ana.sales", "ben.sales"]
    assert len(ax.patches) == 1  # the outline
    assert "allowed, posture fails" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.get_title().endswith("14 pairs allowed, 9 usable, 5 refused by posture")
    codes = analysis.matrix().codes()
    assert codes[1, 0] == 1 + 4 + 8 and codes[0, 4] == 1 + 4  # ben/crm refused; ana/wiki (no posture) usable
    assert analysis.matrix().frame(with_routers=True).loc["ben.sales", "crm"] == "D!"


def test_a_big_heatmap_groups_equal_access_and_labels_groups_by_shared_attributes():
    analysis = Analysis(generate("realistic"))
    ax = access_heatmap(analysis).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "#sales #staff (21)" in labels and ax.get_ylabel() == "identities (150), grouped by access"
    assert len(labels) <= 40 and len(set(labels)) == len(labels)
    import numpy as np  # here: ~0.1 s of CPU in each test process collecting this file

    rows = [row.tobytes() for row in np.asarray(ax.images[0].get_array(), dtype=np.int8)]
    runs = 1 + sum(a != b for a, b in zip(rows, rows[1:]))
    assert runs == len(set(rows)) < 40  # each access pattern is one block of rows


def test_policy_graph_links_identities_policies_services_and_routers(company):
    analysis = Analysis(company)
    graph = policy_graph(analysis)
    assert graph.has_edge(("identity", "ana.sales"), ("servicePolicy", "sales-crm"))
    assert graph.has_edge(("servicePolicy", "sales-crm"), ("service", "crm"))
    assert graph.has_edge(("service", "crm"), ("serviceEdgeRouterPolicy", "eu-services-eu"))
    assert graph.has_edge(("edgeRouterPolicy", "hosts-datacenter"), ("edgeRouter", "er-dc"))
    assert draw_policy_graph(analysis, explanation=analysis.explain("ana.sales", "crm")).axes


# -- the timeline ------------------------------------------------------------------------------
def test_virtual_clients_leave_a_timeline_that_the_view_filters(playground):
    def revoke(pg):
        apply(pg.admin, {"identities": [{"name": "dev.ops", "roleAttributes": ["staff"]}]})

    result = run_virtual_clients(playground, [("ana", "ana.sales", "Sales-Pass-123"), ("dev", "dev.ops", "Ops-Pass-1234")],
                                 rounds=4, changes={2: revoke})
    seen = {(e["namespace"], e.get("event_type")) for e in result.events}
    assert {("authentication", "success"), ("edge.apiSessions", "created")} <= seen
    assert ("edge.failedServiceRequests", "failed") in seen  # ana's CRM dials fail posture
    dev = next(o for o in result.observations if o.name == "dev")
    assert dev.services == {"wiki"} and dev.service_refreshes == 2
    assert list(timeline_frame(result.events, result.names).columns) == ["time", "namespace", "type", "entity", "identity"]

    view = TimelineView(result)
    view.namespaces.value = ("authentication",)
    view.identity.value = "dev.ops"
    kept = view.selected()
    assert len(kept) == 1 and kept[0]["namespace"] == "authentication"
    assert "<b>1 events</b>" in view.table.value and "dev.ops" in view.table.value
    assert view.figure.axes[0].get_title() == "1 events, 1 network change(s)"  # the change stays marked
    assert filter_events(result.events, result.names, None, "ana.sales")


def test_the_timeline_colours_clients_and_marks_network_changes(playground):
    def revoke(pg):
        apply(pg.admin, {"identities": [{"name": "dev.ops", "roleAttributes": ["staff"]}]})

    result = run_virtual_clients(playground, [("ana", "ana.sales", "Sales-Pass-123"), ("dev", "dev.ops", "Ops-Pass-1234")],
                                 rounds=3, changes={2: revoke})
    router_event = {"namespace": "router.circuits", "event_type": "dialed", "timestamp": result.events[-1]["timestamp"]}
    ax = plot_timeline([*result.events, router_event], result.names).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["Default Admin", "ana.sales", "dev.ops", "(no identity)", "network change"]  # admin's apply too
    marks = [t.get_text() for t in ax.texts]
    assert marks == ["updated identities/dev.ops (role_attributes)"]  # logins that touch identities are not changes
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert "router.circuits dialed" in lanes and "authentication success" in lanes
    colours = {tuple(c.get_facecolor()[0]) for c in ax.collections}
    assert len(colours) == 4  # three identities and the neutral grey
