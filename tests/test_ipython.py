"""`%load_ext liveforge` in IPython's own `InteractiveShell`: saves applied before each cell,
and the `%lf_*` magics over the same runtime."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

IPython = pytest.importorskip("IPython")
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

SOURCE = """\
def value():
    return 1


class K:
    def m(self):
        return "old"
"""


@pytest.fixture
def shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[InteractiveShell, str]]:
    """A real InteractiveShell in a project folder holding one module, extension loaded."""
    name = f"lfip_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "liveforge")
    yield ip, name
    ip.run_line_magic("unload_ext", "liveforge")
    InteractiveShell.clear_instance()
    for extra in set(sys.modules) - before:
        if extra.startswith("lfip_"):
            del sys.modules[extra]
    while str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def _cell(ip: InteractiveShell, code: str) -> object:
    result = ip.run_cell(code)
    assert result.error_before_exec is None
    return result


def test_file_saves_apply_before_the_next_cell_with_identity_kept(shell, tmp_path, capsys):
    """Objects and references made before a save run the saved code in the next cell; a save
    that does not compile keeps the old code and says where."""
    ip, name = shell
    _cell(ip, f"import {name} as mod; f = mod.value; obj = mod.K()")
    saved = SOURCE.replace("return 1", "return 2").replace("old", "new")
    (tmp_path / f"{name}.py").write_text(saved)
    _cell(ip, "got = (f(), obj.m(), f is mod.value)")
    assert ip.user_ns["got"] == (2, "new", True)
    assert f"applied {name}: ~value,K.m" in capsys.readouterr().out

    (tmp_path / f"{name}.py").write_text(SOURCE.replace("def value():", "def value(:"))
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 2
    out = capsys.readouterr().out
    assert f"{name}.py:1: SyntaxError:" in out and "old code keeps running" in out


def test_a_changed_top_level_call_is_not_rerun_and_the_cell_is_named(shell, tmp_path, capsys):
    """A save that changes a definition and a top-level call applies the definition only;
    the line says the call was not run again and how to run it here."""
    ip, name = shell
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE + "\nCALLS = []\nCALLS.append(value())\n")
    _cell(ip, f"import {name} as mod")
    path.write_text(
        SOURCE.replace("return 1", "return 22") + "\nCALLS = []\nCALLS.append(value() + 1)\n"
    )
    _cell(ip, "got = (mod.value(), mod.CALLS)")
    assert ip.user_ns["got"] == (22, [1])
    out = capsys.readouterr().out
    assert "not re-run (a loop or a call at top level): line 10 `CALLS.append(value() + 1)`" in out
    assert "run it in a cell" in out and "--rerun" not in out


def test_magics_patch_diff_verify_persist_undo(shell, tmp_path, capsys):
    """%%lf_patch changes the live function; %lf_diff shows it; %lf_persist refuses the
    unverified change naming --force; %lf_verify then %lf_persist writes the file; %lf_undo
    rolls a change back."""
    ip, name = shell
    _cell(ip, f"import {name} as mod; f = mod.value")
    _cell(ip, f"%%lf_patch {name}.value\ndef value():\n    return 5\n")
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 5
    _cell(ip, "%lf_diff")
    assert "+    return 5" in capsys.readouterr().out

    refused = ip.run_cell("%lf_persist")
    assert isinstance(refused.error_in_exec, UsageError)
    assert "%lf_persist --force" in str(refused.error_in_exec)
    assert "return 1" in (tmp_path / f"{name}.py").read_text()

    _cell(ip, f"%lf_verify import {name}; assert {name}.value() == 5")
    assert "passed" in capsys.readouterr().out
    _cell(ip, "%lf_persist")
    assert "return 5" in (tmp_path / f"{name}.py").read_text()

    _cell(ip, f"%%lf_patch {name}.value\ndef value():\n    return 6\n")
    _cell(ip, "%lf_undo")
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 5
    capsys.readouterr()
    # the persist's own write is not mistaken for an edit to apply
    _cell(ip, "pass")
    assert "applied" not in capsys.readouterr().out


def test_undo_after_persist_restores_the_file_then_the_memory(shell, tmp_path, capsys):
    """As the chat's /undo: after %lf_persist, %lf_undo puts the file back and keeps the
    change in memory; a second %lf_undo rolls the change back."""
    ip, name = shell
    path = tmp_path / f"{name}.py"
    _cell(ip, f"import {name} as mod; f = mod.value")
    _cell(ip, f"%%lf_patch {name}.value\ndef value():\n    return 5\n")
    _cell(ip, "%lf_persist --force")
    assert "return 5" in path.read_text()
    _cell(ip, "%lf_undo")
    assert "files restored" in capsys.readouterr().out
    assert path.read_text() == SOURCE
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 5  # the change stays in memory, unpersisted again
    _cell(ip, "%lf_diff")
    assert "+    return 5" in capsys.readouterr().out
    _cell(ip, "%lf_undo")
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 1 and path.read_text() == SOURCE
    assert "rolled back" in capsys.readouterr().out


def test_magic_misuse_is_a_usage_error_not_a_traceback(shell):
    """A patch without a target, or of an unknown target, is a one-line UsageError."""
    ip, name = shell
    for cell in ["%%lf_patch\ndef f():\n    pass\n", f"%%lf_patch {name}.nope.deeper\nx = 1\n"]:
        result = ip.run_cell(cell)
        assert isinstance(result.error_in_exec, UsageError), cell


def test_a_save_refused_for_a_patch_applies_after_undo(shell, tmp_path, capsys):
    """After %%lf_patch, a save of the module is refused with advice in magics; %lf_diff
    says the file differs; following the advice with %lf_undo applies the save; %lf_status
    labels a reload a later save replaced as replaced, not rolled back."""
    ip, name = shell
    path = tmp_path / f"{name}.py"
    _cell(ip, f"import {name} as mod; f = mod.value")
    _cell(ip, f"%%lf_patch {name}.value\ndef value():\n    return 5\n")
    path.write_text(SOURCE.replace("return 1", "return 7"))
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 5
    out = capsys.readouterr().out
    assert f"kept old code: {name}: not applied, it has in-memory changes (c1)" in out
    assert "%lf_persist them, or %lf_undo them and the save applies" in out
    _cell(ip, "%lf_diff")
    out = capsys.readouterr().out
    assert f"{name}: its file was saved since and differs from memory" in out

    _cell(ip, "%lf_undo")
    out = capsys.readouterr().out
    assert "rolled back c1" in out and f"applied {name}: ~value (c2)" in out
    _cell(ip, "got = f()")
    assert ip.user_ns["got"] == 7
    _cell(ip, "%lf_diff")
    assert "memory matches the files" in capsys.readouterr().out

    path.write_text(SOURCE.replace("return 1", "return 8"))
    _cell(ip, "%lf_status")
    out = capsys.readouterr().out
    assert f"c2 reload {name} [replaced by c3]" in out and "c1 function" in out
    assert f"c3 reload {name} [applied]" in out


def test_from_imported_names_follow_a_save_as_autoreload_3(shell, tmp_path, capsys):
    """Names taken with `from m import ...` (an alias too) take what the module binds after
    a save that replaced the object (a new constant, a function now wrapped in an object);
    names a star-imported module gains appear; the line names them."""
    ip, name = shell
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE + "\nLIMIT = 1\n")
    _cell(ip, f"from {name} import LIMIT, value as v\nfrom {name} import *")
    assert ip.user_ns["LIMIT"] == 1 and ip.user_ns["value"] is ip.user_ns["v"]
    tagged = "class Tagged:\n    def __init__(self, f):\n        self.f = f\n\n"
    tagged += "    def __call__(self):\n        return ('tagged', self.f())\n\n\n"
    path.write_text(
        tagged + SOURCE.replace("def value", "@Tagged\ndef value") + "\nLIMIT = 2\nEXTRA = 3\n"
    )
    _cell(ip, "got = (LIMIT, v(), value(), EXTRA)")
    assert ip.user_ns["got"] == (2, ("tagged", 1), ("tagged", 1), 3)
    out = capsys.readouterr().out
    assert "EXTRA, LIMIT, Tagged, v, value in this namespace now name" in out


def test_names_follow_an_undo(shell, tmp_path, capsys):
    """%lf_undo of a patch that rebound a from-imported constant brings the user's copy
    back to the old value, as the module's."""
    ip, name = shell
    (tmp_path / f"{name}.py").write_text(SOURCE + "\nLIMIT = 1\n")
    _cell(ip, f"from {name} import LIMIT")
    _cell(ip, f"%%lf_patch {name}.LIMIT\nLIMIT = 7\n")
    assert ip.user_ns["LIMIT"] == 7
    _cell(ip, "%lf_undo")
    assert ip.user_ns["LIMIT"] == 1


def test_the_extension_loads_by_its_own_module_name_too(tmp_path, monkeypatch, capsys):
    """`%load_ext liveforge.ipython` adds the magics and `%unload_ext liveforge.ipython`
    takes the runtime away again, as the `liveforge` spelling does."""
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "liveforge.ipython")
        assert "lf_patch" in ip.magics_manager.magics["cell"]
        assert "saves under" in capsys.readouterr().out
        assert ip.user_ns["lf_runtime"].project_root == tmp_path.resolve()
        ip.run_line_magic("unload_ext", "liveforge.ipython")
        assert ip._liveforge_magics is None
    finally:
        InteractiveShell.clear_instance()


def test_undo_says_what_a_registry_s_dict_keeps_in_the_kernel_s_words(shell, tmp_path, capsys):
    """%lf_undo of a change that added `@REG.register def f`: `f` stays in `REG.by_name`
    (a dict may name it for its framework), and the undo's note says so, naming the entry
    and that restarting the kernel drops it; the patch's own line has no such note."""
    ip, name = shell
    registry = (
        "class Registry:\n    def __init__(self):\n        self.by_name = {}\n\n"
        "    def register(self, fn):\n        self.by_name[fn.__name__] = fn\n        return fn\n"
        "\n\nREG = Registry()\n"
    )
    (tmp_path / f"{name}.py").write_text(SOURCE + "\n\n" + registry)
    _cell(ip, f"import {name} as mod")
    _cell(ip, f"%%lf_patch {name}.f\n@REG.register\ndef f():\n    return 7\n")
    capsys.readouterr()
    _cell(ip, "%lf_undo")
    out = capsys.readouterr().out
    assert out.startswith("rolled back c1 ") and "\n  note: f: this change defined it" in out
    assert f"{name}.REG.by_name['f']" in out and "Restart the kernel to drop it" in out
    _cell(ip, "got = (hasattr(mod, 'f'), mod.REG.by_name['f']())")
    assert ip.user_ns["got"] == (False, 7)
