"""Real project layouts: inspect, view, patch, verify, run_tests and persist work in each, and
the project overview never shows one folder as two packages."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from liveforge.kernel import Runtime
from liveforge.tools import using_runtime
from liveforge.tools.changes import patch, persist
from liveforge.tools.inspection import inspect_module, view_source
from liveforge.tools.intel import find
from liveforge.tools.running import run_tests, verify

BUGGY = '"""Arithmetic."""\n\n\ndef double(x: int) -> int:\n    return x * 3\n'
FIXED = "def double(x: int) -> int:\n    return x * 2\n"
TEST = "from {pkg}.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


@dataclass
class Layout:
    """How one layout places the package: its folder and the configuration that says so."""

    folder: str
    pyproject: str
    namespace: bool = False


LAYOUTS = {
    "src": Layout("src/{pkg}", ""),
    "package-dir": Layout("lib/{pkg}", '[tool.setuptools]\npackage-dir = {{"" = "lib"}}\n'),
    "pytest-pythonpath": Layout("code/{pkg}", '[tool.pytest.ini_options]\npythonpath = ["code"]\n'),
    "hatch": Layout(
        "source/{pkg}", '[tool.hatch.build.targets.wheel]\npackages = ["source/{pkg}"]\n'
    ),
    "namespace": Layout("src/{pkg}", "", namespace=True),
}


@pytest.fixture(params=sorted(LAYOUTS))
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Runtime, str]]:
    layout = LAYOUTS[request.param]
    top = f"lay{uuid.uuid4().hex[:8]}"
    pkg = f"{top}.inner" if layout.namespace else top
    folder = tmp_path / layout.folder.format(pkg=pkg.replace(".", "/"))
    folder.mkdir(parents=True)
    if not layout.namespace:
        (folder / "__init__.py").write_text('"""The package under test."""\n')
    (folder / "calc.py").write_text(BUGGY)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TEST.format(pkg=pkg))
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\n\n' + layout.pyproject.format(pkg=top)
    )
    rt = Runtime(project_root=tmp_path)
    try:
        with using_runtime(rt):
            yield rt, pkg
    finally:
        rt.close()
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]
        for name in [m for m in sys.modules if m.split(".")[0] == top]:
            del sys.modules[name]


def test_layout_supports_the_whole_loop(project: tuple[Runtime, str]) -> None:
    """The package is listed, viewed, found, patched, verified, tested and persisted."""
    _, pkg = project
    top = pkg.split(".")[0]
    overview = inspect_module()
    assert overview.splitlines()[0].startswith(top)
    assert "double(x: int) -> int" in inspect_module(pkg)
    assert "return x * 3" in view_source(f"{pkg}.calc.double")
    assert find("double").startswith(f"def {pkg}.calc.double(x: int) -> int :4")
    assert "~double" in patch(f"{pkg}.calc.double", FIXED)
    assert "passed" in verify(f"from {pkg}.calc import double\nassert double(2) == 4")
    assert "tests: 1 passed" in run_tests([])
    assert persist().startswith(f"wrote {pkg}.calc -> ")
    assert "return x * 2" in Path(sys.modules[f"{pkg}.calc"].__file__ or "").read_text()


def test_empty_project_says_why_and_what_to_do(tmp_path: Path) -> None:
    """inspect of a project with no packages names where it looked and what to change."""
    (tmp_path / "script.py").write_text("print('hi')\n")
    rt = Runtime(project_root=tmp_path)
    try:
        with using_runtime(rt):
            text = inspect_module()
    finally:
        rt.close()
        sys.path.remove(str(tmp_path))
    assert text.startswith("no Python packages found under the import roots:")
    assert f"{tmp_path} (project root)" in text and "pythonpath" in text
