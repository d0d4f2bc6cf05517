"""One file is one module: liveforge on its own checkout never loads or patches a kernel file
under a second name, and its overview shows the mapped folders only inside `liveforge`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from liveforge.kernel import Runtime
from liveforge.kernel.errors import SecondModuleName

CHECKOUT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import importlib, json, sys
    sys.path.insert(0, {root!r})
    # the kernel's file loaded under a second, bare name before the runtime existed
    importlib.import_module('kernel.boundary._secrets')
    import liveforge
    from liveforge.tools import using_runtime
    from liveforge.tools.inspection import inspect_module, view_source

    def attempt(rt, target):
        try:
            rt.patch(target, "def without_secrets(env):\\n    return dict(env)\\n")
        except Exception as exc:
            return [type(exc).__name__, str(exc)]
        return ["patched", ""]

    out = {{}}
    rt = liveforge.Runtime({root!r})
    out["loaded_first"] = attempt(rt, "kernel.boundary._secrets.without_secrets")
    out["canonical"] = attempt(rt, "liveforge.kernel.boundary._secrets.without_secrets")
    opted = liveforge.Runtime({root!r}, allow_kernel_patches=True)
    out["opted_in"] = attempt(opted, "kernel.boundary._secrets.without_secrets")
    try:
        importlib.import_module('tools._outline')  # a mapped folder, bare name
        out["import"] = ["imported", ""]
    except ImportError as exc:
        out["import"] = [type(exc).__name__, str(exc)]
    with using_runtime(rt):
        out["overview"] = [line for line in inspect_module(depth=0).splitlines() if line[:1] != " "]
        try:
            view_source("tools._outline")
            out["view"] = ["viewed", ""]
        except Exception as exc:
            out["view"] = [type(exc).__name__, str(exc)]
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(
    not (CHECKOUT / "kernel" / "boundary" / "_secrets.py").exists(),
    reason="needs liveforge's own checkout",
)
def test_own_checkout_refuses_kernel_files_under_other_names() -> None:
    """A kernel file imported as `kernel.boundary._secrets` is protected by its location; with the
    opt-in it is still refused as a second module; importing a mapped folder under its
    folder name fails naming the real module; the overview lists only `liveforge`."""
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(root=str(CHECKOUT))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CHECKOUT,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["loaded_first"][0] == "ProtectedTarget"
    assert out["canonical"][0] == "ProtectedTarget"
    assert out["opted_in"][0] == "SecondModuleName"
    assert "'liveforge.kernel.boundary._secrets'" in out["opted_in"][1]
    assert out["import"][0] == "SecondModuleName"
    assert "is module 'liveforge.tools'" in out["import"][1]
    assert [line.split()[0] for line in out["overview"] if line[:1].isalpha()] == ["liveforge/"]
    assert out["view"][0] == "SecondModuleName"
    assert "is module 'liveforge.tools'" in out["view"][1]


def test_second_name_for_a_project_file_is_refused(tmp_path: Path) -> None:
    """A project file reachable under two names (a folder also on sys.path) is loaded once;
    the second import fails naming the first."""
    (tmp_path / "outer" / "inner").mkdir(parents=True)
    (tmp_path / "outer" / "__init__.py").write_text("")
    (tmp_path / "outer" / "inner" / "__init__.py").write_text("")
    (tmp_path / "outer" / "inner" / "mod.py").write_text("VALUE = 1\n")
    rt = Runtime(project_root=tmp_path)
    sys.path.insert(0, str(tmp_path / "outer"))
    try:
        import importlib

        importlib.import_module("outer.inner.mod")
        with pytest.raises(SecondModuleName, match=r"is module 'outer\.inner'"):
            importlib.import_module("inner.mod")
        with pytest.raises(SecondModuleName, match=r"Use 'outer\.inner' instead"):
            rt.patch("inner.mod.VALUE", "VALUE = 2\n")
        assert rt.patch("outer.inner.mod.VALUE", "VALUE = 2\n").target == "outer.inner.mod.VALUE"
    finally:
        rt.close()
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]
        for name in [m for m in sys.modules if m.split(".")[0] in ("outer", "inner")]:
            del sys.modules[name]


def test_a_runtime_no_longer_referenced_stops_capturing_its_project(tmp_path: Path) -> None:
    """The sources and layout a runtime asked to be watched (for source capture and the
    second-name check) lapse with the runtime: a process that makes many runtimes keeps
    only those of the ones it still holds."""
    import gc

    from liveforge.kernel.source import _sources

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    rt = Runtime(project_root=first)
    key = os.path.join(str(first.resolve()), "")
    assert key in _sources._capture.roots
    assert any(layout.root == first.resolve() for layout in _sources._capture.layouts)
    kept = Runtime(project_root=second)
    Runtime(project_root=second)  # dropped at once: its request lapses, kept's stays
    del rt
    gc.collect()
    again = Runtime(project_root=tmp_path)
    try:
        assert key not in _sources._capture.roots
        assert all(layout.root != first.resolve() for layout in _sources._capture.layouts)
        assert os.path.join(str(second.resolve()), "") in _sources._capture.roots
        assert [r[2] and r[2]() for r in _sources._capture.requests].count(kept.modules) == 1
    finally:
        kept.close()
        again.close()
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]
