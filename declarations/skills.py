# mypy: disable-error-code="empty-body"
"""Skills: Markdown instructions the agent loads on demand, so the system prompt stays small.

A skill is a Markdown file with front matter::

    ---
    name: release-notes
    description: Write release notes from the change history
    when_to_use: the user asks for release notes or a changelog entry
    ---
    1. Run `history` ...

It lives in one of three places, searched in this order; a name found earlier hides the same
name later (precedence: project over user over bundled):

    project   <project>/.liveforge/skills/NAME.md  or  .../NAME/SKILL.md
    user      $LIVEFORGE_CONFIG_HOME/skills, else $XDG_CONFIG_HOME/liveforge/skills,
              else ~/.config/liveforge/skills  (same two layouts)
    bundled   the skills shipped with liveforge

The system prompt lists every skill in one line (`index()`); the `load_skill` tool brings a
skill's whole text into the conversation (`load(name)`). A file whose front matter cannot be
read is not listed; `problems()` says why, and loading it by name reports the problem.

Example::

    library = SkillLibrary(project_root)
    [s.name for s in library.skills()]
    library.load("release-notes").body
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import forwardpy
from pydantic import BaseModel, ConfigDict

from liveforge.kernel.errors import LiveforgeError

__all__ = ["Skill", "SkillLibrary", "SkillNotFound", "SkillSource"]

SkillSource = Literal["project", "user", "bundled"]


class Skill(BaseModel):
    """One skill: what the index shows (name, description, when to use) and its text."""

    model_config = ConfigDict(frozen=True)
    name: str
    description: str
    when_to_use: str = ""
    source: SkillSource
    path: Path
    body: str
    """The Markdown after the front matter."""
    hides: tuple[Path, ...] = ()
    """Files of the same name in lower-precedence places, hidden by this one."""


class SkillNotFound(LiveforgeError, LookupError):
    """No usable skill of that name; the message lists the available ones."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class SkillLibrary(forwardpy.Object):
    """The skills visible from one project (see the module docstring for where they live)."""

    project_root: Path
    user_dir: Path | None
    bundled_dir: Path | None

    def __init__(
        self,
        project_root: str | Path,
        *,
        user_dir: str | Path | None = None,
        bundled_dir: str | Path | None = None,
    ) -> None:
        """`user_dir` / `bundled_dir`: None for the defaults (the environment's user
        folder, liveforge's own skills)."""
        self.project_root = Path(project_root)
        self.user_dir = Path(user_dir) if user_dir is not None else None
        self.bundled_dir = Path(bundled_dir) if bundled_dir is not None else None

    def folders(self) -> list[tuple[SkillSource, Path]]:
        """The three skill folders, highest precedence first (they need not exist)."""
        ...

    def skills(self) -> list[Skill]:
        """Every usable skill, one per name (the highest-precedence one), sorted by name."""
        ...

    def problems(self) -> list[str]:
        """One line per skill file that could not be read, naming the file and the fault."""
        ...

    def load(self, name: str) -> Skill:
        """The skill called `name`; SkillNotFound (listing the names there are) otherwise."""
        ...

    def index(self) -> str:
        """One line per skill for the system prompt ("" when there are none)."""
        ...

    def signature(self) -> tuple[tuple[str, float], ...]:
        """(file, mtime) of every skill file: changes when a skill is added, edited or
        removed, so a cached index knows when to rebuild."""
        ...
