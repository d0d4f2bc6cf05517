"""`liveforge run -p PROMPT`: one non-interactive agent task; the exit code says how it went.

Exit 0 when the model answered, 1 when the turn ended otherwise (step limit, runaway,
provider error), 3 when liveforge itself failed, 130 when interrupted. Nobody is there to
answer a permission question, so
in `ask` mode (the default) every call that would ask is refused with a message the model
can act on; `--mode auto-edit`, `--mode full-auto` (or `--yes`) let more run. With `--json`
one object is printed at the end, however the turn went — a fault of the agent machinery
included: the answer, the changes, self-patches rolled back, what a resume re-applied, the
sandbox runs, token usage, the session, and under `fault` what failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from rich.console import Console

from liveforge.cli._agent import add_profile, drive_turn, make_agent, model_name, policy_of
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
from liveforge.cli._cost import cost
from liveforge.cli._render import Renderer
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

    def event(self, event: Any) -> None:
        if event.type == "self_patches_rolled_back":
            self.rolled_back.append({"change_ids": event.change_ids, "reason": event.reason})
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
    ended, fault = None, None
    try:
        ended = asyncio.run(_one_turn(agent, renderer, prompt))
    except Exception as exc:  # a fault of liveforge itself: report it, in JSON too
        fault = {"type": type(exc).__name__, "message": str(exc)}
        console.print_exception(max_frames=8)
    finally:
        close_subagents(agent)
        end_session(agent)
        agent.runtime.close()
    ok = fault is None and ended is not None and ended.reason == "answer"
    if args.json:
        report = _report(agent, ended, collector, renderer.model, fault)
        emit(args, report, "", out=stdout)
    if fault is not None:
        return ExitCode.FAILED
    if ended is not None and ended.reason == "cancelled":
        return ExitCode.INTERRUPTED
    return ExitCode.OK if ok else ExitCode.CHECK_FAILED


def _report(
    agent: Any, ended: Any, collector: _Collector, model: str, fault: dict[str, str] | None
) -> dict[str, Any]:
    """The `run --json` object (its shape is in liveforge/cli/schema.json)."""
    from liveforge.kernel import ChangeStatus

    rt = agent.runtime
    reason = ended.reason if ended else "error"
    ok = fault is None and reason == "answer"
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
        code = ExitCode.INTERRUPTED if reason == "cancelled" else ExitCode.CHECK_FAILED
        if fault is not None:
            code = ExitCode.FAILED
        message = "; ".join(collector.errors) or f"the turn ended without an answer ({reason})"
        payload["error"] = {
            "type": fault["type"] if fault else _ERROR_TYPES.get(reason, "RunFailed"),
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
