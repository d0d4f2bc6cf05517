"""`liveforge run -p PROMPT`: one non-interactive agent task; the exit code says how it went.

Exit 0 when the model answered, 4 when it answered but a tool call was refused (approval
nobody gave, the mode, a deny rule, a plugin: what the task asked for may not be done), 1
when the turn ended otherwise (step limit, runaway, provider error), 3 when liveforge itself
failed, 130 when interrupted. Nobody is there to
answer a permission question, so
in `ask` mode (the default) every call that would ask is refused with a message the model
can act on; `--mode auto-edit`, `--mode full-auto` (or `--yes`) let more run. With `--json`
one object is printed at the end, however the turn went — a fault of the agent machinery
included: the answer, the changes, the refused and the failed tool calls, self-patches rolled
back, what a resume re-applied, the sandbox runs, token usage, the session, and under `fault`
what failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from rich.console import Console

from liveforge.cli._common import (
    CommandError,
    ExitCode,
    add_common,
    add_mode,
    chosen_mode,
    emit,
    examples,
    project_dir,
)
from liveforge.cli.turns._agent import add_profile, drive_turn, make_agent, model_name, policy_of
from liveforge.cli.turns._cost import cost
from liveforge.cli.turns._lifecycle import memory_only
from liveforge.cli.turns._render import Renderer
from liveforge.impls.plugins import end_session
from liveforge.impls.subagents import close_subagents

__all__ = ["register"]


EXAMPLES_RUN = """\
  liveforge run -p "make the bulk discount start at ten units"
  liveforge run -p - --yes --json < task.txt      task from a file; may persist; JSON report
"""


def register(commands: Any) -> None:
    """Add `run` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "run",
        help="run one agent task non-interactively",
        description="Give the agent one task and let it work until it answers.",
        epilog=examples(EXAMPLES_RUN),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-p", "--prompt", required=True, help="the task; '-' reads it from stdin")
    parser.add_argument("--model", help="provider:model for this run (default: configured)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="ID",
        help="continue a session (the latest when no ID is given)",
    )
    add_mode(parser)
    add_profile(parser)
    add_common(parser)
    parser.set_defaults(handler=_run)


class _Collector:
    """Remembers what a JSON report needs while events stream by."""

    def __init__(self) -> None:
        self.answer = ""
        self.patches: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.rolled_back: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.tool_errors: list[dict[str, Any]] = []

    def event(self, event: Any) -> None:
        if event.type == "tool_finished" and event.is_error:
            self._failed_call(event)
        elif event.type == "self_patches_rolled_back":
            self.rolled_back.append(
                {"change_ids": event.change_ids, "reason": event.reason, "notes": event.notes}
            )
        elif event.type == "final_answer":
            self.answer = event.text
        elif event.type == "patch_applied":
            self.patches.append(
                {"change_id": event.change_id, "target": event.target, "kind": event.kind}
            )
        elif event.type == "verification":
            self.runs.append(
                {
                    "run_id": event.run_id,
                    "kind": event.kind,
                    "ok": event.ok,
                    "headline": event.headline,
                }
            )
        elif event.type == "error":
            self.errors.append(f"{event.error_type}: {event.message}")

    def _failed_call(self, event: Any) -> None:
        entry = {"tool": event.name, "call_id": event.call_id, "reason": event.summary.strip()}
        if event.refused is not None:
            self.refused.append({**entry, "by": event.refused})
            self.errors.append(f"refused {event.name}: {entry['reason']}")
        else:
            self.tool_errors.append(entry)


class _Tee(Renderer):
    def __init__(self, console: Console, collector: _Collector, model: str) -> None:
        super().__init__(console, model=model, status=Console(file=sys.stderr, highlight=False))
        self.collector = collector

    def event(self, event: Any) -> None:
        self.collector.event(event)
        super().event(event)


def _run(args: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise CommandError(
            "-p needs a task: give it as text, or `-p -` to read it from standard input."
        )
    # a tool call cancelled by Ctrl-C may still be running `execute`, which captures
    # sys.stdout and sys.stderr while it runs: output goes to the streams we started with
    stdout = sys.stdout
    agent = make_agent(
        project_dir(args),
        model=args.model,
        resume=args.resume,
        mode=chosen_mode(args),
        profile=args.profile,
    )
    console = Console(file=sys.stderr if args.json else stdout, highlight=False)
    collector = _Collector()
    renderer = _Tee(console, collector, model_name(agent.provider))
    ended, fault, left = None, None, []
    try:
        ended = asyncio.run(_one_turn(agent, renderer, prompt))
    except Exception as exc:  # a fault of liveforge itself: report it, in JSON too
        fault = {"type": type(exc).__name__, "message": str(exc)}
        console.print_exception(max_frames=8)
    finally:
        close_subagents(agent)
        end_session(agent)
        left = memory_only(agent.runtime)
        agent.runtime.close()
    code = _exit_code(ended.reason if ended else "error", collector, fault)
    if left and not args.json:  # --json: the report's `diff`
        console.print(_memory_only_line(left, agent.session.id), style="yellow", markup=False)
    if code is ExitCode.REFUSED and not args.json:
        console.print(_refused_line(collector, policy_of(agent).mode), style="yellow", markup=False)
    if args.json:
        report = _report(agent, ended, collector, renderer.model, fault)
        emit(args, report, "", out=stdout)
    return code


def _exit_code(reason: str, collector: _Collector, fault: dict[str, str] | None) -> ExitCode:
    """A fault of liveforge, then an interruption, then a refused call, then the turn's end."""
    if fault is not None:
        return ExitCode.FAILED
    if reason == "cancelled":
        return ExitCode.INTERRUPTED
    if collector.refused:
        return ExitCode.REFUSED
    return ExitCode.OK if reason == "answer" else ExitCode.CHECK_FAILED


def _memory_only_line(modules: list[str], session_id: str) -> str:
    return (
        f"{len(modules)} module(s) changed only in memory, not written to their files: "
        f"{', '.join(modules)}. `liveforge diff` shows the changes; `liveforge chat --resume "
        f"{session_id}` brings them back to check and persist them."
    )


_WAY_OUT = {
    "approval": "{calls} needed a yes nobody was there to give: {modes}add an `allow` rule under "
    '[tool.liveforge.permissions] ("unbounded" for shell commands outside the check boundary, '
    "which ask in every mode, `--yes` included)",
    "policy": "the mode, the tool profile or a `deny` rule forbids {calls}: see `--mode`, "
    "`--profile` and the `deny` lists under [tool.liveforge.permissions] and "
    "[tool.liveforge.tools]",
    "plugin": "a plugin vetoed {calls} (each refusal above says why)",
}
"""What to do about refused calls, by what refused them."""


def _refused_line(collector: _Collector, mode: str) -> str:
    calls = ", ".join(sorted({r["tool"] for r in collector.refused}))
    modes = ""
    if mode != "full-auto":  # in full-auto only an `ask` rule or an unbounded command asks
        modes = "give `run` a mode that allows them (`--mode auto-edit`, `--mode full-auto` or "
        modes += "`--yes`), or "
    ways = []
    for by, way in _WAY_OUT.items():
        tools = sorted({r["tool"] for r in collector.refused if r["by"] == by})
        if tools:
            ways.append(way.format(calls=", ".join(tools), modes=modes))
    return (
        f"{len(collector.refused)} tool call(s) were refused ({calls}): what the task asked "
        f"for may not be done. {'; '.join(ways)}. Exit code 4."
    )


def _report(
    agent: Any, ended: Any, collector: _Collector, model: str, fault: dict[str, str] | None
) -> dict[str, Any]:
    """The `run --json` object (its shape is in liveforge/cli/schema.json)."""
    from liveforge.kernel import ChangeStatus

    rt = agent.runtime
    reason = ended.reason if ended else "error"
    code = _exit_code(reason, collector, fault)
    ok = code is ExitCode.OK
    payload: dict[str, Any] = {
        "ok": ok,
        "command": "run",
        "project": str(rt.project_root),
        "reason": reason,
        "mode": policy_of(agent).mode,
        "answer": collector.answer,
        "patches": collector.patches,
        "runs": collector.runs,
        "errors": collector.errors,
        "refused": collector.refused,
        "tool_errors": collector.tool_errors,
        "rolled_back": collector.rolled_back,
        "restored": agent.session.live.restored,
        "fault": fault,
        "persisted": sorted({c.module for c in rt.history() if c.status is ChangeStatus.PERSISTED}),
        "diff": rt.diff(),
        "session_id": agent.session.id,
        "transcript": str(agent.session.path),
        "usage": ended.usage.model_dump() if ended else None,
        "cost_usd": cost(model, ended.usage) if ended else None,
    }
    if not ok:
        message = "; ".join(collector.errors) or f"the turn ended without an answer ({reason})"
        if code is ExitCode.REFUSED:
            message = _refused_line(collector, policy_of(agent).mode)
        kind = "Refused" if code is ExitCode.REFUSED else _ERROR_TYPES.get(reason, "RunFailed")
        payload["error"] = {
            "type": fault["type"] if fault else kind,
            "message": fault["message"] if fault else message,
            "exit_code": int(code),
        }
    return payload


_ERROR_TYPES = {
    "cancelled": "Interrupted",
    "turn_limit": "TurnLimit",
    "runaway": "Runaway",
    "error": "ProviderError",
}


async def _one_turn(agent: Any, renderer: Renderer, prompt: str) -> Any:
    try:
        return await drive_turn(agent, renderer, prompt)
    finally:
        if agent.tool_running():
            # the process cannot exit before the call's thread ends: say why it waits
            renderer.console.print(
                "a cancelled tool call is still running; liveforge exits "
                "when it ends (Ctrl-C again to stop it now)",
                style="yellow",
            )
        await agent.aclose()
