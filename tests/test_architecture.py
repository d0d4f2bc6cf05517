"""The import graph is the layered architecture, and static readers see the package as it
imports (README, Architecture)."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import jedi
import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Lower layers never import higher ones; the front ends (everything else under liveforge/).
LAYERS = {"kernel": 0, "declarations": 1, "tools": 2, "impls": 3}
FRONT = 4


def _modules() -> dict[str, Path]:
    """Every first-party module by dotted name, each file counted once (symlinks skipped)."""
    found: dict[str, Path] = {}
    for folder in [*LAYERS, "liveforge"]:
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if any(p.is_symlink() for p in rel.parents if p != Path(".")):
                continue
            if "sample" in rel.parts:  # the demo's sample project is data
                continue
            parts = [p for p in rel.with_suffix("").parts if p != "__init__"]
            name = ".".join(parts if folder == "liveforge" else ["liveforge", *parts])
            found[name] = path
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The first-party modules `path` imports, resolved to modules (not names in them)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            candidates = [[f"{node.module}.{a.name}", node.module] for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [[a.name] for a in node.names]
        else:
            continue
        for options in candidates:
            hit = next((c for c in options if c in known and c != name), None)
            if hit:
                out.add(hit)
    return out


def _layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.get(parts[1], FRONT) if len(parts) > 1 else FRONT


GRAPH = {name: _imports(name, path, _modules()) for name, path in _modules().items()}


def test_no_import_goes_up_a_layer():
    """kernel < declarations < tools < impls < front ends: no arrow points back up."""
    upward = sorted(
        f"{src} -> {dst}"
        for src, dsts in GRAPH.items()
        for dst in dsts
        if _layer(dst) > _layer(src)
    )
    assert upward == []


def test_import_graph_has_no_cycle():
    """No two first-party modules import each other, directly or around a circle."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(GRAPH):
        if start not in state:
            visit(start, [start])
    assert cycles == []


#: The kernel's sub-packages and the others each may import (besides `errors`, `defaults`).
#: `runtime` (the `Runtime` facade and its parts) sits on top and may import them all.
KERNEL_MAY_IMPORT = {
    "boundary": set(),
    "files": set(),
    "history": set(),
    "source": {"files"},
    "live": {"source", "files", "history"},
    "checks": {"boundary", "files"},
    "runtime": {"boundary", "checks", "files", "history", "live", "source"},
}
KERNEL_SHARED = {"errors", "defaults"}


def _kernel_part(name: str) -> str | None:
    """The kernel sub-package (or shared module) `name` belongs to, if it is in the kernel."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["liveforge", "kernel"] else None


def test_kernel_is_grouped_by_subsystem():
    """Every kernel module sits in a sub-package of the plan, none holds more than 20."""
    loose = [p.name for p in (ROOT / "kernel").glob("*.py")]
    assert sorted(loose) == ["__init__.py", "defaults.py", "errors.py"]
    folders = sorted(p.name for p in (ROOT / "kernel").iterdir() if p.is_dir() and p.name[0] != "_")
    assert folders == sorted(KERNEL_MAY_IMPORT)
    for folder in folders:
        modules = list((ROOT / "kernel" / folder).glob("*.py"))
        assert len(modules) <= 21, folder  # 20 modules and the __init__
        doc = ast.get_docstring(ast.parse((ROOT / "kernel" / folder / "__init__.py").read_text()))
        assert doc and "Imports:" in doc, f"kernel/{folder}/__init__.py says what it may import"


def test_kernel_subsystems_import_only_what_they_may():
    """live/ never imports checks/, boundary/ imports nothing above it, and so on."""
    forbidden = sorted(
        f"{src} -> {dst}"
        for src, dsts in GRAPH.items()
        if (part := _kernel_part(src)) in KERNEL_MAY_IMPORT
        for dst in dsts
        if (other := _kernel_part(dst)) is not None
        and other != part
        and other not in KERNEL_SHARED
        and other not in KERNEL_MAY_IMPORT[part]
    )
    assert forbidden == []


def test_jedi_goto_lands_on_the_implementation_file():
    """A static reader resolves liveforge.kernel imports to the kernel's own files."""
    code = "from liveforge.kernel import Runtime\nRuntime\n"
    script = jedi.Script(code, path=str(ROOT / "probe.py"), project=jedi.Project(ROOT))
    [name] = script.goto(2, 1, follow_imports=True)
    assert name.module_path is not None
    assert Path(name.module_path).resolve() == ROOT / "kernel" / "runtime" / "_runtime.py"


@pytest.mark.skipif(not (ROOT / "pyproject.toml").exists(), reason="needs the source tree")
def test_wheel_holds_every_module(tmp_path, checkout_copy):
    """The built wheel contains each first-party module under its liveforge.* name."""
    wheel_command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w"]
    subprocess.run(
        [*wheel_command, str(tmp_path), str(checkout_copy)],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {name.replace(".", "/") for name in _modules()}
    missing = [n for n in expected if f"{n}.py" not in names and f"{n}/__init__.py" not in names]
    assert missing == []


def test_the_mcp_front_end_does_not_reach_into_the_cli():
    """Front ends share agent_setup, not each other's internals."""
    assert [m for m in GRAPH["liveforge.mcp_server"] if m.startswith("liveforge.cli")] == []
