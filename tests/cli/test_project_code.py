"""The project's own code is the boundary: a package installed in the project's own `.venv`
(a real virtualenv, a real wheel) is refused at patch without the opt-in and at persist
without `allow_paths`, its file untouched; the standard library likewise, and a `json.dumps`
patch that breaks liveforge's own checks is named as the cause."""

from __future__ import annotations

import importlib
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import make_venv, pip_install, run_cli, wheel

import liveforge
from liveforge import Runtime
from liveforge.errors import NotProjectCode, NotProjectModule, SandboxError

CHECKOUT = Path(liveforge.__file__).resolve().parent.parent
EXT = "def f():\n    return 1\n"
FIX = "def f():\n    return 2\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A project whose `.venv` (inside it) has extpkg_lf installed from a wheel; the
    project root and the installed package's real `__init__.py`."""
    base = tmp_path_factory.mktemp("owncode")
    root = base / "project"
    (root / "app_lf").mkdir(parents=True)
    (root / "app_lf" / "__init__.py").write_text("import extpkg_lf\n\nVALUE = 1\n")
    python = make_venv(root / ".venv", [CHECKOUT, sysconfig.get_paths()["purelib"]])
    pip_install(python, "--no-index", str(wheel(base, "extpkg-lf", {"extpkg_lf/__init__.py": EXT})))
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (base / "fix.py").write_text(FIX)
    yield root, Path(purelib, "extpkg_lf", "__init__.py")


@pytest.fixture
def installed(project: tuple[Path, Path]) -> Iterator[Path]:
    """The installed package imported in this process (from the project's venv)."""
    _, init = project
    sys.path.append(str(init.parent.parent))
    importlib.invalidate_caches()
    importlib.import_module("extpkg_lf")
    yield init
    sys.modules.pop("extpkg_lf", None)
    sys.path.remove(str(init.parent.parent))
    init.write_text(EXT)


def test_a_package_in_the_projects_venv_is_refused_at_patch_and_persist(
    project: tuple[Path, Path], installed: Path
) -> None:
    """Patching it needs outside_project; persisting it is refused even with force, naming
    the real file and the folder to allow; the file is untouched; diff shows where it is."""
    root, _ = project
    rt = Runtime(project_root=root)
    try:
        with pytest.raises(NotProjectModule, match="installed packages") as refused:
            rt.patch("extpkg_lf.f", FIX)
        assert "outside_project=True" in str(refused.value) and not rt.history()
        rt.patch("extpkg_lf.f", FIX, outside_project=True)
        assert rt.diff().startswith(f"--- a/{installed.relative_to(root)}\n")
        assert rt.verify("import extpkg_lf\nassert extpkg_lf.f() == 2").ok
        with pytest.raises(NotProjectCode) as info:
            rt.persist(force=True)
        message = str(info.value)
        assert str(installed.resolve()) in message and "installed packages" in message
        folder = str(installed.parent.relative_to(root))
        assert f"Runtime(allow_paths=[{folder!r}])" in message and info.value.folder == folder
        assert installed.read_text() == EXT
        assert not (root / ".liveforge" / "writes.jsonl").exists()
        rt.rollback()
    finally:
        rt.close()


def test_allow_paths_lets_persist_write_the_installed_package(
    project: tuple[Path, Path], installed: Path
) -> None:
    """With the package's folder in allow_paths it is the user's to change: no opt-in needed
    to patch, and persist writes the real file."""
    root, _ = project
    rt = Runtime(project_root=root, allow_paths=[str(installed.parent.relative_to(root))])
    try:
        rt.patch("extpkg_lf.f", FIX)
        assert rt.verify("import extpkg_lf\nassert extpkg_lf.f() == 2").ok
        assert rt.persist().paths == [str(installed.resolve())]
        assert installed.read_text() == FIX
    finally:
        rt.close()


def test_file_writes_into_the_venv_are_refused(project: tuple[Path, Path]) -> None:
    """write_file into the environment is refused (nothing written) with the same words."""
    root, init = project
    rt = Runtime(project_root=root)
    try:
        with pytest.raises(NotProjectCode, match="in installed packages"):
            rt.write_file(init.relative_to(root), "x = 1\n")
        with pytest.raises(NotProjectCode, match=r"in the environment \.venv"):
            rt.write_file(".venv/notes.txt", "x\n")
        assert init.read_text() == EXT and not (root / ".venv" / "notes.txt").exists()
        assert rt.write_file("app_lf/notes.txt", "mine\n").kind == "file"
    finally:
        rt.close()


def test_the_cli_refuses_and_allows_with_its_own_flag(project: tuple[Path, Path]) -> None:
    """`verify --patch` of the installed package (run in the project's venv) is refused with
    `--outside-project` named; with the flag it is checked, and the file is untouched."""
    root, init = project
    refused = run_cli("verify", "--patch", "extpkg_lf.f=../fix.py", "-c", "1", cwd=root)
    assert refused.returncode != 0
    assert "Pass --outside-project" in refused.stderr and "outside_project=True" not in (
        refused.stderr
    )
    allowed = run_cli(
        "verify", "--outside-project", "--patch", "extpkg_lf.f=../fix.py",
        "-c", "import extpkg_lf\nassert extpkg_lf.f() == 2", cwd=root,
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert init.read_text() == EXT


def test_a_stdlib_patch_is_refused_and_allowed_it_is_named_as_the_cause(tmp_path: Path) -> None:
    """`json.dumps` is refused by default; allowed, the patch breaks liveforge's own check
    machinery, and the check says so naming json, rather than failing with a bare fault."""
    (tmp_path / "app_lf.py").write_text("VALUE = 1\n")
    import json

    code = json.dumps.__code__
    rt = Runtime(project_root=tmp_path)
    try:
        with pytest.raises(NotProjectModule, match="json"):
            rt.patch("json.dumps", "def dumps(obj, **kw):\n    return 'PATCHED'\n")
        assert json.dumps(1) == "1"
        change = rt.patch(
            "json.dumps", "def dumps(obj, **kw):\n    return 'PATCHED'\n", outside_project=True
        )
        with pytest.raises(SandboxError) as info:
            rt.verify("import app_lf\nassert app_lf.VALUE == 1")
        message = str(info.value)
        assert "The patched module json is not the project's own code" in message
        assert f"{change.id} (json.dumps)" in message
        rt.rollback(change.id)
        assert json.dumps(1) == "1"
        assert rt.verify("import app_lf\nassert app_lf.VALUE == 1").ok
    finally:
        json.dumps.__code__ = code
        rt.close()


def test_the_patch_tool_says_its_own_argument(project: tuple[Path, Path], installed: Path) -> None:
    """The agent's (and MCP's) patch tool refuses with its own argument named, and patches
    with outside_project=true; its persist refusal says the user can allow the folder."""
    from liveforge.agent_setup import open_toolbox
    from liveforge.declarations.permissions import Policy

    root, _ = project
    rt = Runtime(project_root=root)
    try:
        box = open_toolbox(rt, policy=Policy(mode="full-auto"))
        refused = box.call("patch", {"path": "extpkg_lf.f", "source": FIX})
        assert refused.is_error and "outside_project=true" in refused.text
        assert "outside_project=True" not in refused.text
        done = box.call("patch", {"path": "extpkg_lf.f", "source": FIX, "outside_project": True})
        assert not done.is_error, done.text
        written = box.call("persist", {"force": True})
        assert written.is_error and "allow_paths under [tool.liveforge]" in written.text
        assert installed.read_text() == EXT
    finally:
        rt.close()


def test_approval_previews_show_the_real_destination(
    project: tuple[Path, Path], installed: Path
) -> None:
    """The question before a patch names the module's real file and that it is not the
    project's own code; before a persist, each module with the file it goes to."""
    from liveforge.agent_setup import open_toolbox
    from liveforge.impls.approvals import preview

    root, _ = project
    rt = Runtime(project_root=root)
    try:
        box = open_toolbox(rt)
        asked = preview(box, "patch", {"path": "extpkg_lf.f", "source": FIX})
        assert f"module extpkg_lf, file {installed.resolve()} (NOT the project's own code" in asked
        rt.patch("extpkg_lf.f", FIX, outside_project=True)
        assert f"extpkg_lf -> {installed.resolve()}" in preview(box, "persist", {})
        rt.rollback()
    finally:
        rt.close()
