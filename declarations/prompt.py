# mypy: disable-error-code="empty-body"
"""The agent's system prompt, built from parts.

    identity     who the agent is and its working method:
                 inspect -> patch -> verify -> test -> persist
    tools        the tool catalogue (name and first line of each description)
    project      an overview of the project: its packages, modules and declarations
    instructions the project's instruction file: LIVEFORGE.md, else AGENTS.md
    memories     the memories most relevant to the current turn (see `focus`), when the
                 memory tools are available

Parts are rebuilt only when what they show changed (the tool names, the runtime's change
history), so asking for the prompt at every step is cheap.

Example::

    prompt = SystemPrompt(runtime=rt, toolbox=toolbox)
    text = prompt.render()
    [part.name for part in prompt.parts()]   # ["identity", "tools", "project", ...]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import forwardpy
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from liveforge.declarations.toolbox import Toolbox
    from liveforge.kernel import Runtime

__all__ = ["PromptPart", "SystemPrompt"]


class PromptPart(BaseModel):
    """One titled section of the system prompt."""

    model_config = ConfigDict(frozen=True)
    name: str
    title: str
    text: str


class SystemPrompt(forwardpy.Object):
    """Builds the system prompt of an agent working on `runtime` with `toolbox`."""

    runtime: Runtime
    toolbox: Toolbox

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
