"""`--patch TARGET=FILE`: a file's source applied to a dotted target in memory first.

`verify` and `test` check with the patches; `inspect` and `view` show the program with them
(changed marks, `origin: "memory"`, the active `@impl` of a declaration the patch imported).
The files stay as they are.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.cli._exits import CommandError

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime

__all__ = ["add_patch_option", "apply_patches", "imports_of", "parse_patch", "patch_rows"]


def add_patch_option(parser: argparse.ArgumentParser, *, then: str) -> None:
    """Add the repeatable `--patch TARGET=FILE`; `then` says what the command does next."""
    parser.add_argument(
        "--patch",
        action="append",
        default=[],
        metavar="TARGET=FILE",
        help=f"apply FILE's source to the dotted TARGET in memory, then {then} (repeatable)",
    )
    parser.add_argument(
        "--outside-project",
        action="store_true",
        help="let --patch change modules that are not the project's own code (standard "
        "library, site-packages, an environment in the project); `outside_project = true` "
        "under [tool.liveforge] allows it always",
    )


def parse_patch(spec: str) -> tuple[str, Path]:
    """Split "TARGET=FILE"; a usage error naming the expected form otherwise."""
    target, sep, file = spec.partition("=")
    if not sep or not target.strip() or not file.strip():
        raise CommandError(f"--patch expects TARGET=FILE (e.g. pkg.mod.func=fix.py), got {spec!r}.")
    path = Path(file.strip()).expanduser()
    if path.is_dir():
        raise CommandError(
            f"--patch {target}: {path} is a folder; give the file that holds the new source."
        )
    if path.exists() and not path.is_file():
        raise CommandError(
            f"--patch {target}: {path} is not a regular file; give the file that holds the "
            "new source."
        )
    if not path.is_file():
        raise CommandError(f"--patch {target}: file {path} does not exist.")
    return target.strip(), path


OUTSIDE_ADVICE = (
    "Pass --outside-project to patch it anyway (or set outside_project = true under "
    "[tool.liveforge] in pyproject.toml)."
)
"""How a command line user allows a patch of a module that is not the project's code."""


def apply_patches(rt: Runtime, specs: list[str], *, outside_project: bool = False) -> list[Change]:
    """Apply every `--patch` in one transaction: all of them or none. `outside_project`
    (the `--outside-project` flag) lets them change modules outside the project's code."""
    from liveforge.kernel.errors import NotProjectModule

    sources = [(target, _read_patch(target, path)) for target, path in map(parse_patch, specs)]
    try:
        with rt.transaction() as changes:
            for target, source in sources:
                rt.patch(target, source, outside_project=outside_project)
    except NotProjectModule as exc:
        raise exc.with_advice(OUTSIDE_ADVICE) from None
    return changes


def patch_rows(changes: list[Change]) -> list[dict[str, Any]]:
    """The changes as the `patches` of a command's JSON object."""
    return [{"change_id": c.id, "target": c.target, "summary": c.summary()} for c in changes]


def imports_of(changes: list[Change]) -> str:
    """A snippet importing each patched module once: the check when no code is given."""
    return "".join(f"import {name}\n" for name in dict.fromkeys(c.module for c in changes))


def _read_patch(target: str, path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(
            f"--patch {target}: {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} "
            f"at offset {exc.start}); save it as UTF-8 and run the command again."
        ) from None
    except OSError as exc:
        raise CommandError(f"--patch {target}: cannot read {path}: {exc.strerror}.") from None
