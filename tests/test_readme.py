"""Every fenced Python block of the README runs as written (```python and ```py alike), pasted line by line
into an interactive prompt (``code.InteractiveConsole``, as ``python`` reads a paste) and compiled as a saved file.

A block whose first line names a test file (``# test_my_sdk.py ...``) is such a file: it runs with
pytest in a project folder of its own, as a user would run it. Every other block runs in order, from
the repository root.
"""

from __future__ import annotations

import code
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST_FILE = re.compile(r"# (test_\w+\.py)")


def all_blocks() -> list[str]:
    return re.findall(r"```(?:python|py)\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def readme_test_files() -> list[tuple[str, str]]:
    return [(m.group(1), block) for block in all_blocks() if (m := TEST_FILE.match(block))]


def python_blocks() -> list[str]:
    return [block for block in all_blocks() if not TEST_FILE.match(block)]


def test_readme_has_a_tour_and_every_fenced_block_is_run_here():
    blocks = python_blocks()
    assert blocks and "LocalController" in blocks[0]
    fenced = re.findall(r"```(\w*)\n", (ROOT / "README.md").read_text())
    python_like = [lang for lang in fenced if lang in ("python", "py", "python3", "pycon")]
    assert len(python_like) == len(all_blocks()) == len(blocks) + len(readme_test_files())
    assert {name for name, _ in readme_test_files()} == {"test_my_sdk.py", "test_echo.py"}


class Prompt(code.InteractiveConsole):
    """An interactive prompt that stops at the first error instead of printing it and reading on."""

    def runcode(self, compiled):
        exec(compiled, self.locals)

    def showsyntaxerror(self, filename=None, **kwargs):
        raise  # noqa: PLE0704 (called while runsource handles the SyntaxError)


def paste(block: str, prompt: Prompt) -> None:
    """Type ``block`` into ``prompt`` line by line, then the blank line that ends a pasted block."""
    for line in [*block.splitlines(), ""]:
        prompt.push(line)


def test_readme_python_blocks_run_as_written(capsys):
    previous = os.getcwd()
    os.chdir(ROOT)
    prompt = Prompt({"__name__": "__console__"}, filename="<stdin>")
    try:
        for block in python_blocks():
            compile(block, "README.md", "exec")  # saved as a file, it is valid too
            paste(block, prompt)
    finally:
        os.chdir(previous)
    printed = capsys.readouterr().out
    assert "['edge-1', 'quickstart-router']" in printed  # what step 5's comment names
    assert "web-host" in printed and "401 UNAUTHORIZED" in printed and "503 TIMEOUT" in printed
    assert "Default Admin" in printed and "expired: 401" in printed
    assert "b'hello'" in printed and "['edge']" in printed
    assert "0 True" in printed  # the drive() block: its url is defined, the load ran without errors
    assert "['written-after-the-failover', 'written-on-a-follower']" in printed  # the cluster lost no write


@pytest.mark.parametrize("name, block", readme_test_files(), ids=lambda v: v if v.startswith("test_") else "")
def test_readme_test_files_pass_with_pytest_in_a_project_of_their_own(name, block, tmp_path):
    (tmp_path / name).write_text(block)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_the_install_the_readme_names_brings_what_the_plugin_and_its_test_files_import(tmp_path):
    """The install the README names for the plugin (``pip install "/path/to/checkout[EXTRAS]" pytest``) brings
    what the README's test files import."""
    named = re.search(r'`pip install "?/path/to/checkout(?:\[([\w,]+)\])?"? pytest`', (ROOT / "README.md").read_text())
    assert named, "the README names how to install the plugin"
    for name, block in readme_test_files():
        (tmp_path / name).write_text(block)
    probe = (
        "import sys, pytest, importlib.metadata as md; pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'harness.pytest_plugin']);"
        "dists = md.packages_distributions();"
        "print(sorted({d for m in list(sys.modules) for d in dists.get(m.split('.')[0], ())}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # only ours
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "2 passed" in result.stdout, result.stdout + result.stderr
    imported = {canonical(name) for name in eval(result.stdout.strip().splitlines()[-1])}
    allowed = base_requirements((named.group(1) or "").split(",")) | {"pytest", "ziti-edge-controller-py"}
    allowed |= requirements_of("pytest")
    for dist in OPPORTUNISTIC:
        allowed |= requirements_of(dist)  # with what it brings when it is there
    assert imported <= allowed, f"imported, but not installed as the README says: {imported - allowed}"


#: imported by a dependency only when present (httpx: brotli, and click and rich for its command line;
#: httpcore: trio, whose own requirements come along; setuptools' distutils hook), so an install without
#: them works the same
OPPORTUNISTIC = {"brotli", "click", "rich", "setuptools", "trio"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements_of(dist: str, seen: set | None = None) -> set[str]:
    """``dist`` and what it requires (without extras), transitively, as installed here."""
    import importlib.metadata as md

    seen = set() if seen is None else seen
    if canonical(dist) in seen:
        return seen
    seen.add(canonical(dist))
    try:
        requires = md.requires(dist) or []
    except md.PackageNotFoundError:
        return seen
    for line in requires:
        if "extra ==" not in line:
            requirements_of(re.split(r"[\s\[<>=!~;(]", line, maxsplit=1)[0], seen)
    return seen


def base_requirements(extras: list[str]) -> set[str]:
    """What ``pip install "CHECKOUT[extras]"`` installs (transitively, as installed here)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in filter(None, extras):
        lines += project["optional-dependencies"][extra]
    out: set[str] = set()
    for line in lines:
        requirements_of(re.split(r"[\s\[<>=!~;(]", line, maxsplit=1)[0], out)
    return out
