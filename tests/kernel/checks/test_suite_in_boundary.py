"""Real test suites run inside the check boundary: suites that write into their project
(generated files, caches, bytecode, clean-ups) pass, nothing reaches the real project, and
the record lists what they wrote; a slice of liveforge's own suite passes there too."""

from __future__ import annotations

import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest
from sandbox_support import snapshot_tree

from liveforge import Runtime
from liveforge.config import load_config
from liveforge.kernel.boundary import _overlay
from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks._sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(probe()[0] < 1, reason="needs Landlock")

SHOP = {
    "pyproject.toml": '[project]\nname = "shop"\nversion = "1.0"\n',
    "shop/__init__.py": "",
    "shop/prices.py": "def total(items):\n    return sum(items)\n",
    "data/old.txt": "stale\n",
    "tests/test_prices.py": """
        from shop.prices import total

        def test_total():
            assert total([1, 2]) == 3
    """,
    "tests/test_writes.py": """
        import compileall, json, os, pathlib, signal, subprocess, sys

        ROOT = pathlib.Path(__file__).resolve().parent.parent

        def test_a_generated_file_next_to_the_tests():
            made = pathlib.Path(__file__).with_name("generated.json")
            made.write_text(json.dumps({"n": 1}))
            assert json.loads(made.read_text()) == {"n": 1}

        def test_a_cache_and_bytecode_in_the_project():
            cache = ROOT / ".cache" / "shop"
            cache.mkdir(parents=True)
            (cache / "data.bin").write_bytes(b"x" * 10)
            assert compileall.compile_dir(ROOT / "shop", quiet=1)

        def test_cleaning_up_a_data_folder():
            (ROOT / "data" / "old.txt").unlink()
            (ROOT / "data").rmdir()

        def test_a_server_process_started_and_stopped():
            server = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
            )
            os.killpg(server.pid, signal.SIGTERM)
            assert server.wait(10) == -signal.SIGTERM
    """,
}


def make_shop(root: Path) -> Path:
    for relative, text in SHOP.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def test_a_suite_writing_into_its_project_passes_and_changes_nothing(tmp_path: Path) -> None:
    shop = make_shop(tmp_path / "shop")
    before = snapshot_tree(shop)
    with Sandbox(shop) as box:
        result = box.run_tests(["-q", "-p", "no:cacheprovider", "tests"])
    assert snapshot_tree(shop) == before
    boundary = result.boundary
    assert boundary is not None
    if boundary.project != "copy-on-write":  # no namespaces here: the project is read-only
        assert boundary.project_reason and result.tests and result.tests.failed == 3
        return
    assert result.ok and result.tests is not None and result.tests.passed == 5, result.summary()
    written = boundary.project_writes
    assert {"tests/generated.json", ".cache/shop/data.bin"} <= set(written)
    assert any(path.startswith("shop/__pycache__/prices.") for path in written)
    assert boundary.project_deletes == ["data"]


def test_importing_modules_without_bytecode_writes_nothing_into_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh project (no `__pycache__` anywhere, as a fresh clone is): the modules and
    test files a check imports leave no bytecode among the project's writes (the cause of a
    slice of liveforge's own suite once failing on a fresh clone), so the record lists only
    what the suite itself wrote."""
    shop = tmp_path / "shop"
    for relative in ("shop/__init__.py", "shop/prices.py", "tests/test_prices.py"):
        (shop / relative).parent.mkdir(parents=True, exist_ok=True)
        (shop / relative).write_text(textwrap.dedent(SHOP[relative]).lstrip("\n"))
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # as on most machines
    with Sandbox(shop) as box:
        result = box.run_tests(["-q", "-p", "no:cacheprovider", "tests"])
    assert result.ok, result.summary()
    assert result.boundary is not None
    assert result.boundary.project_writes == [] and result.boundary.project_deletes == []
    assert not list(shop.rglob("__pycache__"))


@pytest.mark.skipif(_overlay.probe() is not None, reason="needs namespaces of the check's own")
def test_a_slice_of_liveforges_own_suite_passes_inside_the_boundary() -> None:
    """The demo (a nested `liveforge demo` with its loopback model server and its own
    checks), a kernel test file and a sandbox test pass inside a check with the repository's
    own [tool.liveforge.sandbox] settings, loaded as the CLI loads them (network on for the
    loopback server). Nested checks fall back to what the kernel allows there, and say so.
    Nothing is written into the project (pytest's cache is off in the repository's own
    settings), and every test's `tmp_path` is in the check's scratch folder."""
    settings = load_config(ROOT).sandbox.settings(ROOT)
    assert settings.network  # what the demo's loopback model server needs
    rt = Runtime(project_root=ROOT, check_settings=settings)
    try:
        result = rt.run_tests(
            [
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "record_tmp_path",
                "tests/cli/test_demo.py",
                "tests/kernel/source/test_module_identity.py",
                "tests/kernel/checks/test_sandbox.py::test_patched_function_in_overlay_is_what_the_child_runs",
            ],
            timeout=300,
        )
    finally:
        rt.close()
    assert result.ok, result.summary(max_lines=60)
    boundary = result.boundary
    assert boundary is not None and boundary.project == "copy-on-write" and boundary.network
    assert boundary.project_writes == [] and boundary.project_deletes == []
    assert result.tests is not None and result.tests.failed == result.tests.errors == 0
    assert result.tests.passed >= 6 and result.tests.skipped == 0
    scratch = Path(boundary.writable[0])
    junit = ElementTree.parse(Path(result.record_path, "junit.xml"))
    used = {
        case.get("name"): Path(prop.get("value") or "")
        for case in junit.iter("testcase")
        for prop in case.iter("property")
        if prop.get("name") == "tmp_path"
    }
    assert "test_demo_fixes_the_sample_on_disk_and_says_where" in used
    assert len(used) >= 5
    for name, tmp_path in used.items():
        assert tmp_path.is_relative_to(scratch), (name, tmp_path, scratch)
