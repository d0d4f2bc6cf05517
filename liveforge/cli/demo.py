"""`liveforge demo [DIR]`: the whole loop on a sample project, with no key and no network.

The sample project (package `pricing` with a real bug, and its tests) is copied to DIR (or
a new temporary folder); the real agent, toolbox, runtime and sandbox then run one task
against a scripted replay model served by the FakeProvider on loopback. The replay is
labelled as such on screen. Exit 0 when the fix ended up in the file on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from liveforge.cli._common import CommandError, ExitCode, examples
from liveforge.cli.turns._agent import drive_turn, make_agent
from liveforge.cli.turns._render import Renderer

__all__ = ["TASK", "register"]

TASK = (
    "Customers say a line of exactly ten units does not get the bulk discount. Find the "
    "bug in the pricing package, fix it, check the fix and save it."
)


EXAMPLES_DEMO = """\
  liveforge demo                                  in a new temporary folder
  liveforge demo ./lf-demo                        in a new (or empty) folder of your choice
"""


def register(commands: Any) -> None:
    """Add `demo` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "demo",
        help="watch the agent fix a bug in a sample project (replay, offline)",
        description="Copy a sample project to DIR (default: a new temporary folder) and watch "
        "a scripted replay model fix its bug through the real agent: inspect, "
        "patch in memory, verify, test, persist. No key, no network.",
        epilog=examples(EXAMPLES_DEMO),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dir",
        nargs="?",
        metavar="DIR",
        help="where to put the sample project (new or empty folder)",
    )
    parser.set_defaults(handler=_demo)


def _target(args: argparse.Namespace) -> Path:
    from liveforge.demo import copy_sample

    folder = (
        Path(args.dir).expanduser()
        if args.dir
        else Path(tempfile.mkdtemp(prefix="liveforge-demo-"))
    )
    if folder.exists() and not folder.is_dir():
        raise CommandError(
            f"{folder} is a file; give the demo a new or empty folder, e.g. "
            "liveforge demo ./liveforge-demo (or no DIR for a temporary one)."
        )
    try:
        return copy_sample(folder.resolve())
    except FileExistsError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot copy the sample project to {folder}: {exc.strerror}.") from None


def _banner(console: Console, target: Path) -> None:
    console.print(
        Panel(
            Text.assemble(
                ("REPLAY", "bold black on yellow"),
                "  The model's side of this session is a recorded script played by a local fake "
                "model server (no key, no network). Everything else is real: the agent loop, the "
                "tools, in-memory patching, the sandbox, the tests and the file write.",
            ),
            title="liveforge demo",
            border_style="yellow",
        )
    )
    console.print(Text.assemble(("sample project copied to ", "bold"), str(target)), soft_wrap=True)


def _demo(args: argparse.Namespace) -> int:
    from liveforge.declarations.provider import Provider
    from liveforge.demo.replay import REPLAY_MODEL, replay_script
    from liveforge.testing import FakeProvider

    console = Console(highlight=False)
    target = _target(args)
    _banner(console, target)
    with FakeProvider(script=replay_script(), model=REPLAY_MODEL) as fake:
        route = fake.route("anthropic", model=REPLAY_MODEL, name=f"replay:{REPLAY_MODEL}")
        agent = make_agent(
            target, provider=Provider([route]), mode="ask", approver=_auto_approve(console)
        )
        console.print(Text.assemble(("you › ", "bold green"), TASK))
        try:
            asyncio.run(_turn(agent, Renderer(console, model=route.name)))
        finally:
            agent.runtime.close()
    return _report(console, target)


def _auto_approve(console: Console) -> Any:
    def approve(request: Any) -> bool:
        console.print(
            Text(
                f"  (demo: {request.tool} approved automatically; `liveforge chat` asks first)",
                style="dim",
            )
        )
        return True

    return approve


async def _turn(agent: Any, renderer: Renderer) -> None:
    try:
        await drive_turn(agent, renderer, TASK)
    finally:
        await agent.aclose()


def _report(console: Console, target: Path) -> int:
    from liveforge.demo.replay import FIXED_SUBTOTAL

    cart = target / "pricing" / "cart.py"
    fixed = FIXED_SUBTOTAL.splitlines()[3].strip() in cart.read_text(encoding="utf-8")
    if not fixed:
        console.print(
            Text(f"The fix did not reach {cart}; see the messages above.", style="bold red")
        )
        return ExitCode.CHECK_FAILED
    console.print(Text.assemble(("✓ fixed on disk: ", "bold green"), str(cart)), soft_wrap=True)
    console.print(
        f"Look around yourself:\n  cd {target}\n  liveforge test -- -q\n"
        "  liveforge view pricing.cart.Line.subtotal\n  liveforge runs\n"
        "  liveforge chat        (needs a model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or "
        "GEMINI_API_KEY, or give --model ollama:NAME for a local Ollama)",
        soft_wrap=True,
    )
    return ExitCode.OK
