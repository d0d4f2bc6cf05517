"""Run code in this process, REPL style: output captured, last expression's value shown,
exceptions reported as data, and a timeout that really stops runaway Python code.

The timeout is enforced by a watchdog thread that raises `ExecutionTimeout` inside the running
thread (`PyThreadState_SetAsyncExc`); in the main thread a signal also breaks blocking system
calls. Code blocked inside native code cannot be interrupted by Python: then the result says
the code overran and stopped only when the native call returned.
"""

from __future__ import annotations

import ast
import io
import itertools
import signal
import threading
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from pydantic import BaseModel

from liveforge.kernel.defaults import EXECUTE_TIMEOUT
from liveforge.kernel.errors import ExecutionTimeout
from liveforge.kernel.runtime._deadline import AsyncTimer
from liveforge.kernel.source._sources import register_source

_counter = itertools.count(1)
_OUTPUT_LIMIT = 200_000


class ExecutionResult(BaseModel):
    """Outcome of `Runtime.execute`."""

    ok: bool
    value_repr: str | None = None
    stdout: str = ""
    stderr: str = ""
    exception_type: str | None = None
    exception_message: str | None = None
    traceback: str | None = None
    timed_out: bool = False
    duration: float = 0.0
    files_changed: list[str] = []
    """Project files the code created, changed or deleted (relative paths)."""
    files_diff: str = ""
    """What changed in them, as a unified diff."""
    files_unrestorable: list[str] = []
    """Changed files too large to have been kept: undo cannot put them back."""

    def summary(self) -> str:
        """Compact text for a model or a terminal; files the code wrote come first."""
        parts = []
        if self.files_changed:
            parts.append(
                "[this code changed project files: "
                + ", ".join(self.files_changed)
                + " — not through persist; the user can undo it with /undo (rt.unpersist())]"
            )
            if self.files_unrestorable:
                parts.append(f"[too large to restore: {', '.join(self.files_unrestorable)}]")
            parts.append(self.files_diff.rstrip("\n"))
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.traceback:
            parts.append(self.traceback.rstrip("\n"))
        elif self.value_repr is not None:
            parts.append(self.value_repr)
        status = "ok" if self.ok else ("timed out" if self.timed_out else "error")
        parts.append(f"[{status} in {self.duration * 1000:.1f} ms]")
        return "\n".join(parts)


class _Capped(io.StringIO):
    """A text buffer that keeps at most `_OUTPUT_LIMIT` characters."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    def write(self, text: str) -> int:
        room = _OUTPUT_LIMIT - self.tell()
        if room > 0:
            super().write(text[:room])
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        value = self.getvalue()
        if self.dropped:
            value += f"\n[... {self.dropped} more characters of output dropped]\n"
        return value


def _compile(code: str, filename: str) -> tuple[Any, Any]:
    tree = ast.parse(code, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body[-1].value)
        tree.body.pop()
    body = compile(tree, filename, "exec")
    return body, compile(last, filename, "eval") if last is not None else None


class _Watchdog:
    """Raises ExecutionTimeout in the calling thread once `timeout` seconds have passed.

    In the main thread a SIGALRM timer does it (a signal also breaks blocking system calls);
    elsewhere an `AsyncTimer` injects the exception into the running thread.
    """

    def __init__(self, timeout: float) -> None:
        self._alarm_fired = False
        self._timeout = timeout
        self._main = threading.current_thread() is threading.main_thread()
        self._timer = None if self._main else AsyncTimer(timeout, ExecutionTimeout)
        self._previous: Any = None

    @property
    def fired(self) -> bool:
        """True when the timeout interrupted the code."""
        return self._alarm_fired or bool(self._timer and self._timer.fired)

    def __enter__(self) -> _Watchdog:
        if self._timer is not None:
            self._timer.start()
        else:
            self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self._timeout)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.stop()
        else:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)

    def _on_alarm(self, signum: int, frame: Any) -> None:
        self._alarm_fired = True
        raise ExecutionTimeout("execution timed out")


def execute(
    code: str, namespace: dict[str, Any], timeout: float | None = EXECUTE_TIMEOUT
) -> ExecutionResult:
    """Execute `code` in `namespace`; never raises for errors in the code itself."""
    filename = f"<liveforge-exec-{next(_counter)}>"
    register_source(filename, code)
    out, err = _Capped(), _Capped()
    started = time.perf_counter()
    result: dict[str, Any] = {}
    try:
        body, last = _compile(code, filename)
    except SyntaxError as exc:
        return ExecutionResult(
            ok=False,
            exception_type="SyntaxError",
            exception_message=str(exc),
            traceback="".join(traceback.format_exception_only(exc)),
        )
    watchdog = _Watchdog(timeout) if timeout else None
    try:
        with redirect_stdout(out), redirect_stderr(err):
            if watchdog is not None:
                with watchdog:
                    _run(body, last, namespace, result)
            else:
                _run(body, last, namespace, result)
    except BaseException as exc:  # the code's own errors are data, not our failure
        timed_out = bool(watchdog and watchdog.fired)
        if not timed_out and not isinstance(exc, Exception | SystemExit | KeyboardInterrupt):
            raise
        result["error"] = _error_fields(exc, timed_out, timeout, started)
    duration = time.perf_counter() - started
    error = result.get("error")
    return ExecutionResult(
        ok=error is None,
        value_repr=result.get("value"),
        stdout=out.text(),
        stderr=err.text(),
        duration=duration,
        **(error or {}),
    )


def _run(body: Any, last: Any, namespace: dict[str, Any], result: dict[str, Any]) -> None:
    exec(body, namespace)
    if last is not None:
        value = eval(last, namespace)
        if value is not None:
            result["value"] = _safe_repr(value)
            namespace["_"] = value


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not hide the result
        return f"<unrepresentable {type(value).__name__}: {exc}>"
    return text if len(text) <= 10_000 else text[:10_000] + f"... [{len(text)} chars]"


def _user_traceback(exc: BaseException) -> str:
    """The traceback without liveforge's own frames."""
    summary = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in summary if f.filename != __file__]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    return "".join(lines + traceback.format_exception_only(type(exc), exc))


def _error_fields(
    exc: BaseException, timed_out: bool, timeout: float | None, started: float
) -> dict[str, Any]:
    if timed_out:
        elapsed = time.perf_counter() - started
        late = elapsed - (timeout or 0)
        message = f"the code ran past its {timeout:g} s timeout and was interrupted"
        if late > 1.0:
            message += (
                f" {late:.1f} s late: it was blocked in native code, which Python cannot interrupt"
            )
        message += ". Use verify() to run risky code in a sandbox that can be killed."
        return {
            "timed_out": True,
            "exception_type": "ExecutionTimeout",
            "exception_message": message,
            "traceback": _user_traceback(exc).rstrip("\n").rsplit("\n", 1)[0]
            + f"\nExecutionTimeout: {message}\n",
        }
    return {
        "exception_type": type(exc).__name__,
        "exception_message": str(exc),
        "traceback": _user_traceback(exc),
    }
