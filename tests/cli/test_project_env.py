"""liveforge works in the project's own virtualenv: a real `python -m venv` holding a package
liveforge's environment does not have, found, entered by re-exec, and explained when
liveforge is not installed there."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import make_venv, pip_install, run_cli

import liveforge
from liveforge.project_env import find_environment

CHECKOUT = Path(liveforge.__file__).resolve().parent.parent
TINYDEP = "def twice(x):\n    return 2 * x\n"


def _wheel(folder: Path) -> Path:
    """A real wheel of the one-module distribution tinydep-lf (built by hand: no build
    backend needed)."""
    path = folder / "tinydep_lf-1.0-py3-none-any.whl"
    info = "tinydep_lf-1.0.dist-info"
    files = {
        "tinydep_lf.py": TINYDEP,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: tinydep-lf\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            wheel.writestr(name, text)
    return path


APP = {
    "app_lf/__init__.py": '"""An app that needs tinydep_lf."""\n\nimport tinydep_lf\n',
    "app_lf/core.py": "from tinydep_lf import twice\n\n\ndef quad(x):\n    return twice(x) * 3\n",
    "tests/test_core.py": (
        "from app_lf.core import quad\n\n\ndef test_quad():\n    assert quad(1) == 4\n"
    ),
}
FIX = "def quad(x):\n    return twice(twice(x))\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("projenv")
    root = base / "project"
    for name, text in APP.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    # liveforge (this checkout and its installed dependencies) is importable there
    python = make_venv(root / ".venv", [CHECKOUT, sysconfig.get_paths()["purelib"]])
    pip_install(python, "--no-index", str(_wheel(base)))
    (base / "fix.py").write_text(FIX)
    yield root


def test_environment_is_found_and_has_the_dependency(project: Path) -> None:
    """The project's .venv is found; it has the package liveforge's own environment lacks."""
    env = find_environment(project)
    assert env is not None and env.prefix == project / ".venv" and not env.is_current
    assert env.has_liveforge()
    assert subprocess.run([sys.executable, "-c", "import tinydep_lf"]).returncode != 0


def test_commands_run_in_the_project_environment(project: Path) -> None:
    """inspect, view, verify with a patch and test run there (by re-exec), importing the
    project's dependency and checking with the same interpreter."""
    listing = run_cli("inspect", "app_lf", cwd=project)
    assert listing.returncode == 0 and "quad(x) :4" in listing.stdout
    view = run_cli("view", "app_lf.core.quad", cwd=project)
    assert "return twice(x) * 3" in view.stdout
    check = run_cli(
        "verify",
        "--patch",
        f"app_lf.core.quad={project.parent / 'fix.py'}",
        "-c",
        "import sys, app_lf.core; (sys.prefix, app_lf.core.quad(1))",
        cwd=project,
    )
    assert check.returncode == 0, check.stderr
    assert f"('{project / '.venv'}', 4)" in check.stdout
    tests = run_cli("test", "--patch", f"app_lf.core.quad={project.parent / 'fix.py'}", cwd=project)
    assert tests.returncode == 0 and "1 passed" in tests.stdout


def test_api_loop_in_the_project_interpreter(project: Path) -> None:
    """patch, verify, run_tests and persist through the API, run by the project's python."""
    script = textwrap.dedent(
        f"""
        import json, liveforge
        rt = liveforge.Runtime({str(project)!r})
        rt.patch("app_lf.core.quad", {FIX!r})
        checked = rt.verify("from app_lf.core import quad; assert quad(1) == 4").ok
        tested = rt.run_tests(["-q"]).tests.passed
        written = [str(p) for p in rt.persist().paths]
        rt.close()
        print(json.dumps([checked, tested, written]))
        """
    )
    run = subprocess.run(
        [str(project / ".venv" / "bin" / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=project,
    )
    assert run.returncode == 0, run.stderr
    checked, tested, written = json.loads(run.stdout.strip().splitlines()[-1])
    assert (checked, tested) == (True, 1)
    assert written == [str(project / "app_lf" / "core.py")]
    assert "twice(twice(x))" in (project / "app_lf" / "core.py").read_text()


def test_environment_without_liveforge_gets_exact_advice(tmp_path: Path) -> None:
    """A project venv without liveforge: exit 2 with the commands that install the running
    checkout with its python; --this-python runs here, and a missing dependency is named
    with the command that installs it for this interpreter."""
    (tmp_path / "app_lf").mkdir()
    (tmp_path / "app_lf" / "__init__.py").write_text("import tinydep_lf\n")
    (tmp_path / "app_lf" / "core.py").write_text("def quad(x):\n    return x\n")
    python = make_venv(tmp_path / "venv")
    refused = run_cli("inspect", cwd=tmp_path)
    assert refused.returncode == 2
    assert f"uv pip install --python {python} -e {CHECKOUT}" in refused.stderr
    assert f"{python} -m pip install -e {CHECKOUT}" in refused.stderr
    (tmp_path / "fix.py").write_text("def quad(x):\n    return 2 * x\n")
    here = run_cli("--this-python", "verify", "--patch", "app_lf.core.quad=fix.py", "-c", "1",
                   cwd=tmp_path)  # fmt: skip
    assert here.returncode == 3
    assert "No module named 'tinydep_lf' (at app_lf/__init__.py:1)" in here.stderr
    assert f"`{sys.executable} -m pip install tinydep_lf`" in here.stderr
