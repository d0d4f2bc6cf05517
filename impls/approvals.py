"""The permission gate: may this tool call run now?

The toolbox asks `refusal(box, name, effect, values)` before every call. The policy
(`liveforge.declarations.permissions`) decides; an ``ask`` goes to the front end's approver
with a preview of what will happen (the diff a patch or persist makes, the code `execute`
runs). The answer is ``None`` (run it) or a `Refusal`: the text the model can act on, and
what refused the call (for reports: `run --json` lists refused calls).

Code a tool runs can reach the runtime itself (`rt.persist()` inside `execute`), so the
agent's runtime also carries `persist_guard`: a persist made during a tool call that was not
itself an allowed write asks the policy again, with the files' diff as the preview.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import textwrap
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from liveforge.declarations.files import Files
from liveforge.declarations.permissions import (
    UNBOUNDED,
    ApprovalRequest,
    Decision,
    Effect,
    PermissionDenied,
    Policy,
    is_approved,
)
from liveforge.declarations.toolbox import RefusedBy, Toolbox
from liveforge.impls.live_program import released
from liveforge.impls.shell_boundary import view_unavailable
from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.errors import LiveforgeError

__all__ = [
    "HOW_TO_ALLOW",
    "HOW_TO_ALLOW_UNBOUNDED",
    "Refusal",
    "approval_wait",
    "in_tool_call",
    "persist_guard",
    "preview",
    "refusal",
]

HOW_TO_ALLOW = (
    "The user can allow it with a more permissive mode (`--mode auto-edit` or "
    "`--mode full-auto`, or `--yes`, on the command line; `mode` under "
    "[tool.liveforge.permissions] in pyproject.toml) or by adding the tool to that table's "
    "`allow` list."
)
HOW_TO_ALLOW_UNBOUNDED = (
    "A command outside the check boundary needs the user's yes in every mode, `--yes` "
    "included; the user can let such commands run without a question by adding "
    '"unbounded" to the `allow` list under [tool.liveforge.permissions] in pyproject.toml. '
    "A command that works inside the boundary (boundary=true, the default) goes by the "
    "permission mode like any other."
)
_PREVIEW_LINES = 80


class Refusal(str):
    """The text of a refusal (for the model), knowing what refused the call (`by`)."""

    by: RefusedBy

    def __new__(cls, text: str, by: RefusedBy) -> Refusal:
        made = super().__new__(cls, text)
        made.by = by
        return made


def refusal(box: Toolbox, name: str, effect: Effect, values: dict[str, Any]) -> Refusal | None:
    """None when tool `name` may run with `values`; else why not, in words the model can
    act on."""
    if is_approved():
        return None
    policy: Policy = box.policy
    decision = policy.decide(name, effect)
    if decision is Decision.ALLOW:
        return None
    unbounded = effect == UNBOUNDED
    what = f"{name} outside the check boundary" if unbounded else f"{name} ({effect})"
    how = HOW_TO_ALLOW_UNBOUNDED if unbounded else HOW_TO_ALLOW
    if decision is Decision.DENY:
        rules = policy.rules
        ruled = rules.names("deny", name) or (unbounded and UNBOUNDED in rules.deny)
        by = "a deny rule" if ruled else f"{policy.mode!r} mode"
        return Refusal(
            f"not run: {what} is refused by {by}. Do not retry it; do what you can with "
            f"the tools this mode allows and tell the user what is left. {how}",
            "policy",
        )
    approver = box.approver
    if approver is None:
        return Refusal(
            f"not run: {what} needs the user's approval in {policy.mode!r} mode, and nobody "
            "is here to approve it (a non-interactive run). Do not retry it; finish with "
            f"what you can do without it and tell the user what is left. {how}",
            "approval",
        )
    request = ApprovalRequest(name, effect, dict(values), preview(box, name, values))
    asked = time.monotonic()
    try:
        with released():  # other sessions' tool calls go on while a person decides
            yes = approver(request)
    except Exception as exc:  # a front end that cannot ask any more (closed, cancelled)
        _record(box, request, f"not asked ({type(exc).__name__})")
        return Refusal(
            f"not run: asking the user about {name} failed ({type(exc).__name__}: {exc}). "
            "Nothing was changed; tell the user what you wanted to do.",
            "approval",
        )
    finally:
        _waited.seconds = approval_wait() + time.monotonic() - asked
    _record(box, request, "allowed" if yes else "declined")
    if yes:
        return None
    return Refusal(
        f"not run: the user declined {name}. Nothing was changed. Do not retry it as "
        "it was; ask the user what they want instead.",
        "approval",
    )


def _record(box: Toolbox, request: ApprovalRequest, answer: str) -> None:
    """The question, as the person saw it, and the answer, in the session's transcript
    (the toolbox's ``transcript`` service: anything with ``note(kind, text, **data)``)."""
    note = getattr(box.services.get("transcript"), "note", None)
    if note is not None:
        note("approval", request.preview, tool=request.tool, effect=request.effect, answer=answer)


_waited = threading.local()


def approval_wait() -> float:
    """Seconds this thread has spent waiting for the user's answers to approval questions
    (a tool's time shown to the user leaves them out)."""
    return float(getattr(_waited, "seconds", 0.0))


_calling: ContextVar[bool] = ContextVar("liveforge_tool_call", default=False)


@contextlib.contextmanager
def in_tool_call() -> Iterator[None]:
    """Mark the running code as a tool call the model asked for (see `persist_guard`)."""
    token = _calling.set(True)
    try:
        yield
    finally:
        _calling.reset(token)


def persist_guard(box: Toolbox, modules: list[str]) -> None:
    """A runtime persist guard: a persist reached from inside a tool call that was not an
    allowed write (say, `rt.persist()` in `execute`) needs the policy's yes too."""
    if not _calling.get():
        return  # the program or the person persisting: not the agent's call
    why = refusal(box, "persist", "write", {"modules": modules})
    if why is not None:
        raise PermissionDenied(why, tool="persist", mode=box.policy.mode)


def preview(box: Toolbox, name: str, values: dict[str, Any]) -> str:
    """What a call of tool `name` will do, for a person deciding whether to allow it."""
    try:
        text = _specific(box, name, values)
    except (LiveforgeError, LookupError, OSError, ValueError):
        text = None  # e.g. a patch of a name that does not exist yet: show the arguments
    if text is None:
        text = _arguments(values)
    lines = text.splitlines()
    if len(lines) > _PREVIEW_LINES:
        lines = [*lines[:_PREVIEW_LINES], f"… ({len(lines) - _PREVIEW_LINES} more lines)"]
    return "\n".join(lines)


def _specific(box: Toolbox, name: str, values: dict[str, Any]) -> str | None:
    rt = box.runtime
    if name == "execute":
        return f"run in the live process:\n{values.get('code', '')}"
    if name == "persist":
        diff = rt.diff(None) if not values.get("modules") else _diffs(rt, values["modules"])
        force = " (force: over unverified changes or edits on disk)" if values.get("force") else ""
        where = _destinations(rt, values.get("modules"))
        return f"write to files{force}:\n{where}{diff or '(nothing to write)'}"
    if name == "patch" and not values.get("module"):
        old = rt.source(values["path"])  # tracks the module, so its file is known
        where = _where(rt, values["path"], values.get("outside_project"))
        return where + _patch_diff(old, values["source"], values["path"])
    if name == "patch":
        old = rt.source(values["path"]) if values["path"] in _managed(rt) else ""
        where = _where(rt, values["path"], values.get("outside_project")) if old else ""
        return where + _patch_diff(old, values["source"], values["path"])
    if name == "reload":
        return f"re-read {values['module']} from its file" + (
            " (dropping its unpersisted changes)" if values.get("force") else ""
        )
    if name == "rollback":
        which = values.get("change_id") or "the newest change"
        return f"roll back {which} (and the later changes of its module)"
    if name in _FILE_TOOLS:
        return _file_preview(box, name, values)
    if name in ("exec", "process"):
        return _shell_preview(box, name, values)
    return None


_FILE_TOOLS = ("write_file", "edit_file", "apply_patch")


def _file_preview(box: Toolbox, name: str, values: dict[str, Any]) -> str:
    """The unified diff the write will make, or why it will not apply."""
    files = Files(runtime=box.runtime, settings=box.settings.files)
    try:
        if name == "write_file":
            planned = {values["path"]: values["content"]}
        elif name == "edit_file":
            new = files.edited(
                values["path"],
                values["old_string"],
                values["new_string"],
                bool(values.get("replace_all")),
            )
            planned = {values["path"]: new}
        else:
            planned = files.patched(values["patch"])
        return files.preview(planned)
    except LiveforgeError as exc:
        return f"{name} will not apply, and writes nothing if allowed:\n{exc}"


def _shell_preview(box: Toolbox, name: str, values: dict[str, Any]) -> str:
    """The exact command, where it runs, whether inside the boundary, network on or off."""
    action = values.get("action", "run")
    if name == "process" and action != "start":
        process = values.get("process_id") or "(no process_id given)"
        return f"{action} background process {process} and everything it started"
    verb = "run in bash" if name == "exec" else "start in the background, in bash"
    shell = box.settings.shell
    network = shell.network if values.get("network") is None else values["network"]
    root = Path(box.runtime.project_root)
    cwd = values.get("cwd") or "."
    if not values.get("boundary", True):
        where = "OUTSIDE the check boundary: full environment (secrets too), files and network"
    elif probe()[0]:
        where = (
            "inside the check boundary: writes only in the project and $TMPDIR, "
            f"network {'on' if network else 'off'}"
        )
    else:
        where = f"inside the check boundary without isolation ({probe()[1]}): no secrets, limits"
    timeout = values.get("timeout") or (shell.timeout if name == "exec" else None)
    limit = f"\ntimeout: {timeout:g}s" if timeout else ""
    no_view = view_unavailable() if values.get("boundary", True) else "outside the boundary"
    files = (
        f"file changes: not undoable ({no_view})"
        if no_view
        else "file changes: made on a copy-on-write view, then applied as one undoable step"
    )
    command = values.get("command", "")
    return f"{verb}:\n{command}\nin: {cwd} ({root / cwd}){limit}\n{where}\n{files}"


def _destinations(rt: Any, modules: list[str] | None) -> str:
    """The real file each module would be written to, one line each (a module in an
    environment shows where it really goes)."""
    records = [r for r in rt.registry.dirty() if modules is None or r.name in modules]
    return "".join(f"{r.name} -> {Path(r.filename).resolve()}\n" for r in records if not r.virtual)


def _where(rt: Any, target: str, outside: object) -> str:
    """The module file a patch of `target` changes, and whether it is the project's own."""
    records = {r.name: r for r in rt.registry.records()}
    parts = target.split(".")
    for depth in range(len(parts), 0, -1):
        record = records.get(".".join(parts[:depth]))
        if record is None or record.virtual:
            continue
        why = rt.code.reason(record.filename)
        note = f" (NOT the project's own code: {why})" if why else ""
        flag = "; outside_project=true" if why and outside else ""
        return f"module {record.name}, file {Path(record.filename).resolve()}{note}{flag}\n"
    return ""


def _diffs(rt: Any, modules: list[str]) -> str:
    return "".join(rt.diff(m) for m in modules)


def _managed(rt: Any) -> set[str]:
    return {record.name for record in rt.registry.records()}


def _patch_diff(old: str, new: str, path: str) -> str:
    old, new = textwrap.dedent(old), textwrap.dedent(new)  # a method's source is indented
    new = new if new.endswith("\n") else new + "\n"
    diff = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{path} (now)",
        tofile=f"{path} (patched, in memory)",
    )
    return "".join(diff) or f"{path}: no change"


def _arguments(values: dict[str, Any]) -> str:
    return json.dumps(values, indent=2, ensure_ascii=False, default=str)
