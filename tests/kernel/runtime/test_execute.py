"""Runtime.execute: in-process code with captured output and a real timeout."""

from __future__ import annotations

import threading


def test_output_and_last_expression_value(rt):
    """stdout is captured and the last expression's repr is the value."""
    result = rt.execute("print('hello')\n40 + 2")
    assert result.ok and result.stdout == "hello\n" and result.value_repr == "42"


def test_exception_is_reported_not_raised(rt):
    """An exception in the code comes back as data with a traceback of the code's lines."""
    result = rt.execute("x = 1\nraise ValueError('bad')")
    assert not result.ok and result.exception_type == "ValueError"
    assert "raise ValueError('bad')" in result.traceback and "_execute.py" not in result.traceback


def test_namespace_persists_between_calls(rt):
    """Names bound by one execute are visible to the next; `rt` is the runtime."""
    rt.execute("counter = 41")
    assert rt.execute("counter + 1").value_repr == "42"
    assert rt.execute("rt is not None").value_repr == "True"


def test_runaway_loop_is_interrupted_at_the_timeout(rt):
    """An infinite loop in the main thread is stopped and reported as timed out."""
    result = rt.execute("while True:\n    pass", timeout=0.2)
    assert result.timed_out and not result.ok and "timeout" in result.exception_message


def test_blocking_sleep_is_interrupted_in_main_thread(rt):
    """A blocking system call in the main thread is broken by the timeout."""
    result = rt.execute("import time\ntime.sleep(30)", timeout=0.2)
    assert result.timed_out and result.duration < 10


def test_runaway_loop_in_worker_thread_is_interrupted(rt):
    """Outside the main thread the timeout is injected into the running thread."""
    results = []
    thread = threading.Thread(
        target=lambda: results.append(rt.execute("while True:\n    pass", timeout=0.2))
    )
    thread.start()
    thread.join(20)
    assert results and results[0].timed_out


def test_system_exit_is_captured(rt):
    """SystemExit raised by the code does not end the process."""
    result = rt.execute("raise SystemExit(3)")
    assert result.exception_type == "SystemExit"


def test_syntax_error_is_reported(rt):
    """Code that does not compile is an error result."""
    result = rt.execute("def (")
    assert result.exception_type == "SyntaxError"


def test_large_output_is_capped(rt):
    """Output beyond the cap is dropped with a marker, not held whole."""
    result = rt.execute("print('x' * 1_000_000)")
    assert len(result.stdout) < 300_000 and "more characters of output dropped" in result.stdout


def test_files_the_code_writes_are_reported_and_unpersist_puts_them_back(rt, project):
    """Created, changed and deleted project files are listed with a diff, and one
    unpersist() restores all three; files in skipped folders (.git, an environment of any
    name) are not watched, so undo never writes into them."""
    changed = project.write(project.name("c"), "x = 1\n")
    doomed = project.write(project.name("d"), "y = 2\n")
    doomed.chmod(0o640)
    (project.root / ".git").mkdir()
    (project.root / "myenv" / "lib").mkdir(parents=True)  # an environment by another name
    (project.root / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    code = (
        f"import pathlib\n"
        f"pathlib.Path({str(changed)!r}).write_text('x = 99\\n')\n"
        f"pathlib.Path({str(doomed)!r}).unlink()\n"
        f"pathlib.Path({str(project.root / 'new.txt')!r}).write_text('hello\\n')\n"
        f"pathlib.Path({str(project.root / '.git' / 'HEAD')!r}).write_text('ref\\n')\n"
        f"pathlib.Path({str(project.root / 'myenv' / 'lib' / 'x.py')!r}).write_text('x\\n')\n"
    )
    result = rt.execute(code)
    assert result.ok
    assert result.files_changed == sorted([changed.name, doomed.name, "new.txt"])
    assert "-x = 1\n+x = 99" in result.files_diff and "+hello" in result.files_diff
    assert result.summary().startswith("[this code changed project files: ")
    assert rt.files_are_newest() and "+x = 99" in rt.file_writes_diff()
    restored = rt.unpersist()
    assert sorted(restored.modules) == sorted([changed.name, doomed.name, "new.txt"])
    assert changed.read_text() == "x = 1\n" and doomed.read_text() == "y = 2\n"
    assert doomed.stat().st_mode & 0o777 == 0o640
    assert not (project.root / "new.txt").exists()
    assert not rt.files_are_newest() and rt.file_writes_diff() == ""


def test_code_that_writes_nothing_reports_nothing_and_a_later_patch_is_undone_first(rt, project):
    """No file change, no report; after a file write, a newer live patch is what undo
    meets first (files_are_newest is False until it is rolled back)."""
    module = project.module("def f():\n    return 1\n")
    assert rt.execute("1 + 1").files_changed == []
    rt.execute(f"open({str(project.root / 'note.txt')!r}, 'w').write('n')")
    change = rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
    assert not rt.files_are_newest()
    rt.rollback(change.id)
    assert rt.files_are_newest()


def test_a_persist_made_by_the_code_is_undone_as_that_persist_not_twice(rt, project):
    """Files the code wrote through rt.persist() are the persist's undo step, not also a
    watched write: one unpersist puts the file back and leaves nothing behind."""
    module = project.module("def f():\n    return 1\n")
    path = project.root / f"{module.__name__}.py"
    rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
    result = rt.execute("rt.persist(force=True)")
    assert result.ok and result.files_changed == []
    assert "return 2" in path.read_text()
    rt.unpersist()
    assert path.read_text() == "def f():\n    return 1\n" and not rt.files_are_newest()
