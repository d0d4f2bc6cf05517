"""The sandbox child sees exactly the parent's overlay; the template is reused until stale."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import file_overlay, shows_sandbox_frames, temp_package

from liveforge.kernel.checks._sandbox import OverlayModule, Sandbox

DECLARATION = textwrap.dedent('''
    import forwardpy


    class Greeter(forwardpy.Object):
        def greet(self, name: str) -> str:
            """Say hello."""
            ...
''')
IMPL = textwrap.dedent("""
    import forwardpy

    from {pkg}.decl import Greeter


    @forwardpy.impl(Greeter.greet)
    def greet(self: Greeter, name: str) -> str:
        return f"hello {{name}}"
""")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("overlay")
    with Sandbox(root, runs_dir=root / "runs") as box:
        yield box


def test_patched_function_in_overlay_is_what_the_child_runs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with temp_package(tmp_path, {"mod.py": "def f(x):\n    return x + 1\n"}) as pkg:
        module = __import__(f"{pkg}.mod", fromlist=["f"])
        patched = file_overlay(tmp_path, f"{pkg}.mod", "def f(x):\n    return x * 100\n")
        result = sandbox.verify(f"from {pkg}.mod import f\nf(2)", [patched])
        assert (result.status, result.value_repr) == ("passed", "200")
        assert module.f(2) == 3


def test_unpatched_modules_of_the_package_still_come_from_disk(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    files = {"mod.py": "def f(x):\n    return x + 1\n", "other.py": "VALUE = 'disk'\n"}
    with temp_package(tmp_path, files) as pkg:
        patched = file_overlay(tmp_path, f"{pkg}.mod", "def f(x):\n    return 0\n")
        result = sandbox.verify(f"from {pkg} import other\nother.VALUE", [patched])
        assert result.value_repr == "'disk'"


def test_forwardpy_declaration_and_impl_from_the_overlay_work_in_child(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with temp_package(tmp_path, {"decl.py": "", "impl.py": ""}) as pkg:
        overlay = [
            file_overlay(tmp_path, f"{pkg}.decl", DECLARATION),
            file_overlay(tmp_path, f"{pkg}.impl", IMPL.format(pkg=pkg)),
        ]
        code = f"import {pkg}.impl\nfrom {pkg}.decl import Greeter\nGreeter().greet('ada')"
        result = sandbox.verify(code, overlay)
        assert (result.status, result.value_repr) == ("passed", "'hello ada'")


def test_new_virtual_modules_and_packages_are_importable_in_child(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with temp_package(tmp_path, {}) as pkg:
        overlay = [
            OverlayModule.new_virtual(f"{pkg}.extra", "WORD = 'extra'\n"),
            OverlayModule.new_virtual(f"{pkg}_new", "", is_package=True),
            OverlayModule.new_virtual(f"{pkg}_new.tools", "def name():\n    return 'tools'\n"),
        ]
        code = (
            f"from {pkg}.extra import WORD\nfrom {pkg}_new.tools import name\n"
            f"import {pkg}_new.tools as t\n(WORD, name(), t.__file__)"
        )
        result = sandbox.verify(code, overlay)
        assert result.value_repr == f"('extra', 'tools', '<liveforge:{pkg}_new.tools>')"


def test_traceback_shows_the_in_memory_source_lines(sandbox: Sandbox, tmp_path: Path) -> None:
    with temp_package(tmp_path, {"mod.py": "def f(x):\n    return x\n"}) as pkg:
        source = "def f(x):\n    check = x > 0\n    raise ValueError('in memory only')\n"
        patched = file_overlay(tmp_path, f"{pkg}.mod", source)
        result = sandbox.verify(f"from {pkg}.mod import f\nf(1)", [patched])
        assert (result.status, result.exc_type) == ("error", "ValueError")
        assert result.traceback is not None
        assert f'File "{patched.filename}", line 3, in f' in result.traceback
        assert "raise ValueError('in memory only')" in result.traceback
        assert not shows_sandbox_frames(result.traceback)


def test_failed_assertion_is_failed_and_the_value_is_absent(sandbox: Sandbox) -> None:
    result = sandbox.verify("x = 1\nassert x == 2, 'x is not two'")
    assert (result.status, result.exc_type, result.exc_message) == (
        "failed",
        "AssertionError",
        "x is not two",
    )
    assert result.value_repr is None


def test_a_bare_assert_names_its_line_where_a_message_would_be(sandbox: Sandbox) -> None:
    """An exception without a message (`assert x == 2`) is said by the line that raised it,
    not as "AssertionError: " with nothing after it."""
    result = sandbox.verify("x = 1\nassert x == 2")
    assert result.message == "AssertionError at line 2 of the snippet: assert x == 2"


def test_syntax_error_in_the_snippet_is_an_error(sandbox: Sandbox) -> None:
    result = sandbox.verify("def broken(:\n")
    assert (result.status, result.exc_type) == ("error", "SyntaxError")


def test_runs_reuse_one_template(sandbox: Sandbox) -> None:
    sandbox.verify("1")
    pid, starts = sandbox.template_pid, sandbox.template_starts
    assert sandbox.verify("2").value_repr == "2"
    assert (sandbox.template_pid, sandbox.template_starts) == (pid, starts)


def test_template_refreshes_when_a_preloaded_file_changes_on_disk(tmp_path: Path) -> None:
    with (
        temp_package(tmp_path, {"lib.py": "VALUE = 1\n"}) as pkg,
        Sandbox(tmp_path, runs_dir=tmp_path / "runs", preload=[f"{pkg}.lib"]) as box,
    ):
        assert box.verify(f"from {pkg}.lib import VALUE\nVALUE").value_repr == "1"
        first = box.template_pid
        (tmp_path / pkg / "lib.py").write_text("VALUE = 22\n")
        assert box.verify(f"from {pkg}.lib import VALUE\nVALUE").value_repr == "22"
        assert box.template_pid != first
        assert "changed on disk" in (box.last_refresh_reason or "")


def test_template_refreshes_when_the_overlay_replaces_a_preloaded_module(tmp_path: Path) -> None:
    with (
        temp_package(tmp_path, {"lib.py": "VALUE = 1\n"}) as pkg,
        Sandbox(tmp_path, runs_dir=tmp_path / "runs", preload=[f"{pkg}.lib"]) as box,
    ):
        box.verify("0")
        first = box.template_pid
        patched = file_overlay(tmp_path, f"{pkg}.lib", "VALUE = 'overlay'\n")
        assert box.verify(f"from {pkg}.lib import VALUE\nVALUE", [patched]).value_repr == (
            "'overlay'"
        )
        assert box.template_pid != first
        assert "overlay replaces" in (box.last_refresh_reason or "")


def test_template_killed_from_outside_is_replaced(tmp_path: Path) -> None:
    import os
    import signal

    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        box.verify("0")
        pid = box.template_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert box.verify("5").value_repr == "5"
        assert box.template_pid not in (None, pid)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"code": b"1"}, TypeError),
        ({"code": "1", "timeout": 0}, ValueError),
        ({"code": "1", "memory_mb": -5}, ValueError),
        (
            {
                "code": "1",
                "overlay": [OverlayModule.new_virtual("a", ""), OverlayModule.new_virtual("a", "")],
            },
            ValueError,
        ),
    ],
)
def test_bad_arguments_are_refused_before_any_run(
    sandbox: Sandbox, kwargs: dict, error: type[Exception]
) -> None:
    before = len(sandbox.runs())
    with pytest.raises(error):
        sandbox.verify(**kwargs)
    assert len(sandbox.runs()) == before


def test_dropped_sandbox_stops_its_template(tmp_path: Path) -> None:
    import gc

    from sandbox_support import process_gone

    box = Sandbox(tmp_path, runs_dir=tmp_path / "runs")
    box.verify("0")
    pid = box.template_pid
    assert pid is not None
    del box
    gc.collect()
    assert process_gone(pid)


def test_child_sees_the_parents_current_environment_with_root_cwd_and_own_argv(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.verify("0")  # the template already runs before the variable is set
    monkeypatch.setenv("LIVEFORGE_TEST_SETTING", "late value")
    code = "import os, sys\n(os.environ['LIVEFORGE_TEST_SETTING'], os.getcwd(), sys.argv)"
    result = sandbox.verify(code)
    argv = [f"<verify:{result.run_id}>"]
    assert result.value_repr == repr(("late value", str(sandbox.project_root), argv))


def test_environment_never_enters_the_record(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVEFORGE_TEST_VALUE", "sk-do-not-record")
    result = sandbox.verify("import os\nlen(os.environ['LIVEFORGE_TEST_VALUE'])")
    assert result.value_repr == "16"
    for path in Path(result.record_path).rglob("*"):
        if path.is_file():
            assert "sk-do-not-record" not in path.read_text(errors="replace")


def test_preloaded_module_starting_a_thread_falls_back_to_a_bare_template(tmp_path: Path) -> None:
    threaded = (
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), "
        "daemon=True).start()\n"
    )
    with (
        temp_package(tmp_path, {"threaded.py": threaded}) as pkg,
        Sandbox(tmp_path, runs_dir=tmp_path / "runs", preload=[f"{pkg}.threaded"]) as box,
    ):
        result = box.verify(f"import sys\n{pkg + '.threaded'!r} in sys.modules")
        assert result.value_repr == "False"
        assert box.template_starts == 2


def test_preloaded_module_importing_an_overlay_module_falls_back_to_a_bare_template(
    tmp_path: Path,
) -> None:
    files = {"dep.py": "VALUE = 'disk'\n", "lib.py": "from .dep import VALUE\n"}
    with (
        temp_package(tmp_path, files) as pkg,
        Sandbox(tmp_path, runs_dir=tmp_path / "runs", preload=[f"{pkg}.lib"]) as box,
    ):
        patched = file_overlay(tmp_path, f"{pkg}.dep", "VALUE = 'overlay'\n")
        result = box.verify(f"from {pkg}.lib import VALUE\nVALUE", [patched])
        assert result.value_repr == "'overlay'"
        assert box.template_starts == 2


def test_error_while_importing_an_overlay_module_shows_only_user_frames(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with temp_package(tmp_path, {"mod.py": ""}) as pkg:
        patched = file_overlay(tmp_path, f"{pkg}.mod", "X = 1\nraise RuntimeError('at import')\n")
        result = sandbox.verify(f"import {pkg}.mod", [patched])
        assert (result.status, result.exc_type) == ("error", "RuntimeError")
        assert result.traceback is not None
        assert "raise RuntimeError('at import')" in result.traceback
        assert not shows_sandbox_frames(result.traceback) and "frozen" not in result.traceback


def test_secret_environment_variables_do_not_reach_the_child(tmp_path, monkeypatch):
    """Keys like ANTHROPIC_API_KEY are not in a sandbox run's environment (nor its record)."""
    from liveforge.kernel.checks._sandbox import Sandbox

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    monkeypatch.setenv("LIVEFORGE_PLAIN_SETTING", "visible")
    with Sandbox(tmp_path) as sandbox:
        result = sandbox.verify(
            "import os\nprint(dict(os.environ))\nos.environ.get('LIVEFORGE_PLAIN_SETTING')"
        )
    assert result.value_repr == "'visible'"
    assert "sk-ant-very-secret" not in result.stdout
    record = "".join(p.read_text() for p in Path(result.record_path).rglob("*") if p.is_file())
    assert "sk-ant-very-secret" not in record
