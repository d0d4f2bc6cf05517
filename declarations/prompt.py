# mypy: disable-error-code="empty-body"
"""The agent's system prompt, built from parts.

    identity     who the agent is and its working method:
                 inspect -> patch -> verify -> test -> persist
    tools        the tool catalogue (name and first line of each description)
    project      an overview of the project: its packages, modules and declarations
    instructions the project's instruction file: LIVEFORGE.md, else AGENTS.md, else CLAUDE.md
    skills       one line per skill (`liveforge.declarations.skills`); load_skill loads one
    memories     the memories most relevant to the current turn (see `focus`), when the
                 memory tools are available

Parts are rebuilt only when what they show changed (the tool names, the runtime's change
history, the instruction and skill files), so asking for the prompt at every step is cheap.

Example::

    prompt = SystemPrompt(runtime=rt, toolbox=toolbox)
    text = prompt.render()
    [part.name for part in prompt.parts()]   # ["identity", "tools", "project", ...]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from liveforge.declarations.contract import Contract, fresh

if TYPE_CHECKING:
    from liveforge.declarations.toolbox import Toolbox
    from liveforge.kernel import Runtime

__all__ = ["PromptCache", "PromptPart", "SystemPrompt"]


class PromptPart(BaseModel):
    """One titled section of the system prompt."""

    model_config = ConfigDict(frozen=True)
    name: str
    title: str
    text: str


@dataclass
class PromptCache:
    """Parts built already, with what they were built from (rebuilt when that changes)."""

    key: object = None
    """What `parts` were built from: tool names, the change history, the instruction file."""
    parts: list[PromptPart] = field(default_factory=list)


class SystemPrompt(Contract):
    """Builds the system prompt of an agent working on `runtime` with `toolbox`."""

    runtime: Runtime
    toolbox: Toolbox
    cache: PromptCache = fresh(PromptCache)
    topic: str = ""
    """What the current turn is about (set by `focus`): memories relevant to it are offered."""

    def parts(self) -> list[PromptPart]:
        """The prompt's sections, in order (empty sections left out)."""
        ...

    def render(self) -> str:
        """The whole prompt text."""
        ...

    def focus(self, text: str) -> None:
        """What the current turn is about: the memories most relevant to ``text`` are
        offered in the prompt (within the memory settings' token budget)."""
        ...
