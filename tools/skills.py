"""Skills on demand: the system prompt lists them in one line each; this brings one in.

Skills are Markdown files in the project's `.liveforge/skills/`, the user's config folder, or
bundled with liveforge (`liveforge.declarations.skills`).
"""

from __future__ import annotations

from liveforge.declarations.permissions import effect
from liveforge.declarations.skills import SkillLibrary
from liveforge.tools._context import runtime

__all__ = ["load_skill"]


@effect("read")
def load_skill(name: str) -> str:
    """Load a skill (listed under Skills in your instructions) and follow its text.

    Args:
        name: the skill's name, as listed
    """
    skill = SkillLibrary(runtime().project_root).load(name)
    head = f"Skill {skill.name} ({skill.source}: {skill.path})"
    if skill.hides:
        head += f"; it overrides {', '.join(str(p) for p in skill.hides)}"
    return f"{head}\n\n{skill.body}"
