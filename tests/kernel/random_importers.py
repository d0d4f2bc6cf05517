"""Modules importing from the generated module in the random edit test: one copies constants
with `from m import ...` and makes a default and a value from one, the other re-exports it
with `from m import *` and binds one name itself. Both must hold what fresh imports of them
would after the edits."""

from __future__ import annotations

import types
from typing import Any

USER = """from {mod} import SCALE, DERIVED


def clip(x, hi=SCALE):
    return min(x, hi)


HALF = SCALE // 2
"""

STAR = "from {mod} import *\n\nK3 = 'own'\n"


def importer_differences(
    module: types.ModuleType, fresh: types.ModuleType, user: Any, star: Any
) -> list[str]:
    """Where the modules importing from the live one differ from fresh imports of them: the
    from-import copies and what was made from them at import (a default, a value), and the
    names a star import binds (but those the importer binds itself afterwards)."""
    found = [
        f"  from-import copy of {name}: {getattr(user, name)!r}"
        for name in ("SCALE", "DERIVED")
        if getattr(user, name) != getattr(fresh, name)
    ]
    if (user.clip.__defaults__, user.HALF) != ((fresh.SCALE,), fresh.SCALE // 2):
        found.append(f"  made from SCALE in the importer: {user.clip.__defaults__}, {user.HALF}")
    public = {n for n in vars(fresh) if not n.startswith("_")}
    starred = {n for n in vars(star) if not n.startswith("_")}
    if starred != public | {"K3"}:
        found.append(f"  star import binds {sorted(starred ^ (public | {'K3'}))} wrongly")
    wrong = [n for n in public & starred - {"K3"} if vars(star)[n] is not vars(module)[n]]
    if wrong or star.K3 != "own":
        found.append(f"  star import holds old objects for {sorted(wrong)} (K3: {star.K3!r})")
    return found
