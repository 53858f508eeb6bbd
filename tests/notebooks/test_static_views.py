"""What a notebook shows without a live widget manager, and what the policy graph says about posture."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis import Analysis
from harness.network import Network
from harness.notebook import MatrixView, PolicyExplorer, TimelineView, run_virtual_clients, sample_network, Playground
from harness.analysis.plots import draw_policy_graph, policy_graph

WIDGET = "application/vnd.jupyter.widget-view+json"
ROOT = Path(__file__).resolve().parents[2]
POSTURE = {"ben.sales": {"domain": "corp.example", "os": {"type": "Linux", "version": "6.8"}}}


def test_matplotlib_comes_with_the_first_picture_not_with_the_notebook_module():
    # ~0.4 s of CPU in every process importing harness.notebook (each test process collecting this file)
    probe = (
        "import sys\n"
        "import harness.notebook\n"
        "print('matplotlib' in sys.modules)\n"
        "from harness.analysis.plots import Picture, _figure\n"
        "figure = _figure(1, 1)\n"
        "print(isinstance(figure, Picture), type(figure).__module__, figure.to_html().startswith('<img'))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "harness.analysis.plots", "True"]


@pytest.fixture
def company() -> Network:
    return Network.from_yaml(sample_network("company"))


def test_the_explorer_displays_as_a_widget_and_as_static_html(company):
    explorer = PolicyExplorer(company, posture=POSTURE)
    explorer.identity.value, explorer.service.value = "ben.sales", "crm"
    static = explorer.static_bundle()["text/html"]
    assert "ben.sales CANNOT dial crm: allowed, but posture checks fail" in static
    assert "supported-os (OS) FAILS" in static and "identity ben.sales [sales, staff, us]" in static
    # the live widget carries the rule that hides the copy wherever it renders
    marker = static.split("'")[1]
    assert marker.startswith("ziti-static-") and f".{marker} {{display: none}}" in explorer.widget.children[-1].value


def test_displaying_a_widget_shows_the_copy_then_the_widget_and_clicks_update_the_copy(company):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    explorer = PolicyExplorer(company, posture=POSTURE)
    updates = []
    with capture_output() as captured:
        display(explorer)
        explorer._handle.update = lambda bundle, raw: updates.append(bundle["text/html"])
        explorer.identity.value = "eve.contractor"
    copy, live = (output.data for output in captured.outputs)
    assert "identity ana.sales" in copy["text/html"] and live[WIDGET]["model_id"] == explorer.widget.model_id
    assert "eve.contractor CANNOT dial crm" in updates[-1]


def test_the_matrix_view_static_html_follows_the_filters(company):
    view = MatrixView(Analysis(company))
    view.identity_attr.value = "sales"
    static = view.static_bundle()["text/html"]
    assert "identities sales" in static and "2 identities x 5 services" in static and "data:image/png" in static


def test_the_timeline_static_html_has_the_picture_and_the_table():
    playground = Playground.start(sample_network("company"))
    try:
        result = run_virtual_clients(playground, [("ana", "ana.sales", "Sales-Pass-123")], rounds=2)
    finally:
        playground.close()
    static = TimelineView(result).static_bundle()["text/html"]
    assert "data:image/png" in static and "<th>namespace</th>" in static and "authentication" in static


def test_posture_checks_sit_on_the_path_of_the_policies_that_require_them(company):
    analysis = Analysis(company, posture=POSTURE)
    graph = policy_graph(analysis)
    assert graph.has_edge(("postureCheck", "supported-os"), ("servicePolicy", "sales-crm"))
    assert graph.has_edge(("postureCheck", "corp-domain"), ("servicePolicy", "finance-payroll"))
    assert not graph.has_edge(("postureCheck", "corp-domain"), ("servicePolicy", "staff-wiki"))
    ax = draw_policy_graph(analysis, explanation=analysis.explain("ben.sales", "crm")).axes[0]
    labels = {t.get_text() for t in ax.texts}
    assert {"supported-os (FAILS)", "corp-domain (passes)"} <= labels
    assert ax.get_title(loc="left") == "ben.sales CANNOT dial crm: allowed, but posture checks fail"


def test_a_later_cell_leaves_an_earlier_cells_copy_as_that_cell_left_it(company):
    """The 02 notebook displays the explorer on ben.sales, then a later cell picks eve.contractor."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    explorer = PolicyExplorer(company, posture=POSTURE)
    updates = []
    with capture_output():
        explorer.identity.value, explorer.service.value = "ben.sales", "crm"
        display(explorer)
        explorer._handle.update = lambda bundle, raw: updates.append(bundle["text/html"])
        explorer.type.value = "Bind"  # the same cell: the copy follows
        assert len(updates) == 1 and "ben.sales CANNOT bind crm" in updates[-1]
        explorer.type.value = "Dial"
        shell.execution_count += 1  # the next cell
        explorer.identity.value = "eve.contractor"
    assert len(updates) == 2 and "eve.contractor" not in updates[-1]
