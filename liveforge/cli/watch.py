"""`liveforge watch [-- PROGRAM ARGS]`: run a Python program and apply every file save to it.

The program runs in this process as `__main__` (a script, or `-m module`); a background
thread follows the project's files and reloads each saved module through the patch engine
(`liveforge.watch.Watcher`). Without a program, an interactive Python prompt runs instead.
The program's exit code is the command's.
"""

from __future__ import annotations

import argparse
import code
import importlib.util
import linecache
import shlex
import sys
import tokenize
import traceback
import types
from pathlib import Path
from typing import Any

from liveforge.cli._common import (
    CommandError,
    ExitCode,
    add_common,
    examples,
    positive_seconds,
    project_dir,
)

__all__ = ["register"]

EXAMPLES = """\
  liveforge watch -- app.py --port 8000     run app.py; each save applies to it live
  liveforge watch -- -m shop.worker         run a module as the program
  liveforge watch --test "-q tests/test_cart.py" -- app.py
                                            run those tests after each applied save
  liveforge watch --verify "import shop; assert shop.cart.total([]) == 0" -- app.py
  liveforge watch --rerun -- app.py         also re-run changed top-level loops and calls
  liveforge watch                           an interactive Python prompt that follows saves
"""


def register(commands: Any) -> None:
    """Add `watch` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "watch",
        help="run a program and apply each file save to it live",
        description="Run a Python program (a script, or -m module) and apply every save of "
        "a .py file under --project to the running program: functions and classes keep "
        "their identity, a save that does not compile keeps the old code. A changed "
        "top-level loop or call (main() at the bottom, a serving loop) is not run again "
        "unless --rerun. Every save gets one line on standard error: applied (what changed), "
        "kept old code (why), held (it looks half-written), or in sync again; --verify and "
        "--test run in the background after it.",
        epilog=examples(EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--verify",
        metavar="CODE",
        help="run CODE in the sandbox after each applied save, in the background (its value "
        "is shown; a newer save stops it)",
    )
    parser.add_argument(
        "--test",
        metavar="ARGS",
        help='run pytest in the sandbox after each applied save, with ARGS (e.g. "-q tests"; '
        '"" for all), in the background; failing tests are named with their assertion',
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="also run changed top-level loops and calls again (they run in the watcher: "
        "one that blocks stops later saves from applying)",
    )
    parser.add_argument(
        "--settle",
        type=_seconds,
        default=0.02,
        metavar="SECONDS",
        help="how long a saved file must stay unchanged before it is applied (default 0.02); "
        "a file that looks half-written is waited for up to 1 s more, then held until saved "
        "again",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        help="seconds for each --verify/--test check (default 60)",
    )
    parser.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        metavar="-- PROGRAM ARGS",
        help="the program: a script and its arguments, or -m module and its arguments",
    )
    add_common(parser, json_flag=False)
    parser.set_defaults(handler=_watch)


def _watch(args: argparse.Namespace) -> int:
    from liveforge.kernel import Runtime
    from liveforge.watch import Watcher

    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    root = project_dir(args)
    test = shlex.split(args.test) if args.test is not None else None
    module, source = _main_module(program)
    rt = Runtime(project_root=root)
    watcher = Watcher(
        rt,
        verify=args.verify,
        test=test,
        timeout=args.timeout,
        rerun=args.rerun,
        settle=args.settle,
    )
    sys.modules["__main__"] = module
    watcher.track_loaded()
    watcher.start()
    sys.stderr.write(f"[liveforge] watching {root} for saves (Ctrl-C stops)\n")
    sys.stderr.flush()
    try:
        return _run(module, source, program)
    finally:
        watcher.stop()
        rt.close()


def _seconds(text: str) -> float:
    """A number of seconds, zero allowed (`--settle 0` applies a save as soon as it is seen)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (e.g. 0.2)")
    return value


def _main_module(program: list[str]) -> tuple[types.ModuleType, str]:
    """A fresh `__main__` for the program and its source (pinned in linecache), not yet run."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = __builtins__
    if not program:
        return module, ""
    if program[0] == "-m":
        if len(program) < 2:
            raise CommandError("watch -- -m needs a module name, e.g. liveforge watch -- -m app")
        filename, package, spec = _module_file(program[1])
        module.__spec__ = spec
        module.__package__ = package
    else:
        filename = str(Path(program[0]).resolve())
        if not filename.endswith(".py") or not Path(filename).is_file():
            what = "is not a .py file" if Path(filename).exists() else "does not exist"
            raise CommandError(
                f"watch runs a Python program: {program[0]!r} {what} (looked for "
                f"{filename}). Give a script (liveforge watch -- app.py) or a module "
                "(liveforge watch -- -m app)."
            )
        sys.path.insert(0, str(Path(filename).parent))
    try:
        with tokenize.open(filename) as handle:
            source = handle.read()
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {filename}: {exc}; save it as UTF-8.") from None
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return module, source


def _module_file(name: str) -> tuple[str, str, Any]:
    """The source file of module `name` run as a program (a package runs its __main__)."""
    spec = _find(name)
    if spec is not None and spec.submodule_search_locations is not None:
        name = f"{name}.__main__"
        spec = _find(name)
    if spec is None or not (spec.origin or "").endswith(".py"):
        raise CommandError(
            f"no Python module {name!r} to run; check the name, or run from the folder that "
            "holds it (or pass --project DIR)."
        )
    return str(spec.origin), name.rpartition(".")[0], spec


def _find(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise CommandError(f"cannot find module {name!r}: {exc}") from None


def _run(module: types.ModuleType, source: str, program: list[str]) -> int:
    """Run the program in `module` (or a prompt); its exit status."""
    filename = getattr(module, "__file__", None)
    if filename is None:
        try:
            code.interact(
                banner="liveforge watch: saves under the project apply here (Ctrl-D leaves)",
                local=module.__dict__,
                exitmsg="",
            )
        except SystemExit as exc:  # exit() or sys.exit() typed at the prompt: leave
            return _exit_status(exc.code)
        return ExitCode.OK
    sys.argv = [filename, *program[2 if program[0] == "-m" else 1 :]]
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except SystemExit as exc:
        return _exit_status(exc.code)
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return ExitCode.INTERRUPTED
    except BaseException:
        traceback.print_exc()
        return 1
    return ExitCode.OK


def _exit_status(status: object) -> int:
    if status is None:
        return 0
    if isinstance(status, int):
        return status
    sys.stderr.write(f"{status}\n")
    return 1
