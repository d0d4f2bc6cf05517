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
