"""Every notebook runs top to bottom, failing on any error, and every widget has a static view.

The notebooks share one kernel per test process (a kernel start and the heavy imports are most of a
notebook's time); before each notebook the kernel's namespace is reset and its figures closed, so a
notebook that leans on another's variables still fails.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# nbformat, nbclient and jupyter_client are imported where used: nbformat's import alone costs a second of
# CPU (jsonschema builds an IRI grammar), paid by every test process that merely collects this file

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTEBOOKS = {"02-policy-explorer", "03-access-matrix", "05-timeline"}


def test_the_notebooks_are_all_there():
    assert [p.name for p in NOTEBOOKS] == ["01-tour.ipynb", "02-policy-explorer.ipynb", "03-access-matrix.ipynb",
                                           "04-auth-and-enrollment.ipynb", "05-timeline.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)


RESET = "%reset -f\nimport os as _os, matplotlib.pyplot as _plt\n_plt.close('all'); _os.chdir({folder!r}); del _os, _plt"


@pytest.fixture(scope="module")
def kernel():
    """One python3 kernel for every notebook this process runs."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    # the checkout under test comes first (an installed copy elsewhere would be imported otherwise)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    manager.start_kernel(cwd=str(FOLDER), env={**os.environ, "PYTHONPATH": path})
    yield manager
    manager.shutdown_kernel(now=True)


def run_on(kernel, notebook) -> None:
    """Execute ``notebook`` on the shared kernel; raises CellExecutionError on the first failing cell."""
    from nbclient import NotebookClient

    client = NotebookClient(notebook, km=kernel, timeout=300, allow_errors=False,
                            resources={"metadata": {"path": str(FOLDER)}})
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()


def reset(kernel) -> None:
    """A clean namespace, no open figures and the notebooks' folder as the working directory."""
    import nbformat

    code = RESET.format(folder=str(FOLDER))
    run_on(kernel, nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]))


def test_the_kernel_imports_the_checkout_under_test(kernel):
    import nbformat

    reset(kernel)
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import controller, harness\nprint(controller.__file__, harness.__file__)")])
    run_on(kernel, probe)
    printed = "".join(o.get("text", "") for o in probe.cells[0].outputs).split()
    assert printed and all(Path(p).resolve().is_relative_to(ROOT) for p in printed), printed


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path, kernel):
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    reset(kernel)
    run_on(kernel, notebook)
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any(o.output_type in ("execute_result", "display_data") for o in outputs)
    widget_cells = [cell for cell in notebook.cells if cell.cell_type == "code"
                    and any(WIDGET in o.get("data", {}) for o in cell.outputs)]
    # an exported or reopened notebook has no widget manager: each widget cell also holds a static copy
    for cell in widget_cells:
        static = [o for o in cell.outputs if WIDGET not in o.get("data", {})
                  and (o.get("data", {}).get("text/html") or o.get("data", {}).get("image/png"))]
        assert static, cell.source
    assert bool(widget_cells) == (path.stem in WIDGET_NOTEBOOKS)
    if path.stem.startswith("02"):  # the explorer's copy shows its own cell's choice, not a later cell's
        shown = next(cell for cell in widget_cells if "PolicyExplorer.from_analysis" in cell.source)
        copy = next(o["data"]["text/html"] for o in shown.outputs if "text/html" in o.get("data", {}))
        assert "ben.sales" in copy and "eve.contractor" not in copy
