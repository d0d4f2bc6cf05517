"""`SystemPrompt` bodies: identity and method, tools, project overview, instructions, skills.

The project overview is the `inspect_module` tool's own tree of the project's packages
(depth 2, or depth 1 when that is too long), so the model sees the same notation its tool
gives back. Skills are listed one line each; `load_skill` brings one in when it applies. Parts
are cached and rebuilt when the tool names or the runtime's changes (or their statuses) move,
or when the instruction file or a skill file changes on disk.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import forwardpy

from liveforge.declarations.memory import Memory, memory_path
from liveforge.declarations.permissions import Decision
from liveforge.declarations.prompt import PromptPart, SystemPrompt
from liveforge.declarations.skills import SkillLibrary
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.kernel.errors import LiveforgeError
from liveforge.tools._context import using_runtime
from liveforge.tools.inspection import inspect_module

__all__ = ["IDENTITY", "INSTRUCTION_FILES", "OVERVIEW_LIMIT"]

INSTRUCTION_FILES = ("LIVEFORGE.md", "AGENTS.md", "CLAUDE.md")
OVERVIEW_LIMIT = 6000
"""Characters of the project overview before a shallower tree is shown."""
_INSTRUCTIONS_LIMIT = 12_000

IDENTITY = """\
You are liveforge, an engineer working inside a running Python program. You change it \
while it runs: every module is addressed by its dotted path (pkg.mod.func), patches take \
effect in memory at once, and files change only when you persist validated changes.

Working method, in this order:
1. Inspect: inspect_module and view_source show the live (in-memory) code; find and \
references locate code. Read before you change.
2. Patch: patch one definition (or a whole module) by dotted path. Each patch is a \
recorded change that rollback undoes. Keep patches small.
3. Verify: verify runs a snippet in a sandbox carrying your changes; check the behaviour \
you changed, including edge cases.
4. Test: run_tests runs the project's tests in the sandbox with your changes.
5. Persist: persist writes verified changes to files. Never persist what failed a check.

Declarations (forwardpy classes) are contracts; their methods are implemented by @impl \
bodies elsewhere. Patching a declared method patches its active @impl body. Your own \
behaviour is code too: liveforge.declarations holds your contracts, liveforge.impls their \
bodies, liveforge.tools your tools. Patches to liveforge itself take effect after the \
current step and are undone automatically if they break you; persisting them runs \
liveforge's own test suite first. The files of liveforge.kernel and \
liveforge.declarations cannot be patched (a declared method's @impl body can).

Tool results are cut when long; ask for a narrower part rather than repeating a call. \
When you have the answer, say it plainly and stop calling tools."""


_PERMISSION_NOTES = {
    Decision.ASK: " [asks the user first]",
    Decision.DENY: " [refused in this permission mode]",
}


def _tools_part(prompt: SystemPrompt) -> PromptPart:
    policy = prompt.toolbox.policy
    lines = []
    for tool in prompt.toolbox.tools():
        first = (tool.schema.description or "").strip().splitlines()
        note = _PERMISSION_NOTES.get(policy.decide(tool.name, tool.effect), "")
        lines.append(f"- {tool.name}: {first[0] if first else ''}".rstrip(": ") + note)
    head = f"Permission mode: {policy.mode}.\n"
    return PromptPart(name="tools", title="Tools", text=head + "\n".join(lines))


def _project_part(prompt: SystemPrompt) -> PromptPart:
    rt = prompt.runtime
    with using_runtime(rt):
        tree = inspect_module("", depth=2)
        if len(tree) > OVERVIEW_LIMIT:
            tree = inspect_module("", depth=1)
    head = f"Project root: {rt.project_root}\n"
    return PromptPart(name="project", title="Project overview (live)", text=head + tree)


def _instruction_file(root: Path) -> Path | None:
    for name in INSTRUCTION_FILES:
        if (root / name).is_file():
            return root / name
    return None


def _instructions_part(prompt: SystemPrompt) -> PromptPart | None:
    path = _instruction_file(Path(prompt.runtime.project_root))
    if path is None:
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if len(text) > _INSTRUCTIONS_LIMIT:
        text = text[:_INSTRUCTIONS_LIMIT] + f"\n[... {path.name} cut here]"
    return PromptPart(name="instructions", title=f"Project instructions ({path.name})", text=text)


def _skills(prompt: SystemPrompt) -> SkillLibrary:
    return SkillLibrary(prompt.runtime.project_root)


def _skills_part(prompt: SystemPrompt) -> PromptPart | None:
    if "load_skill" not in {t.name for t in prompt.toolbox.tools()}:
        return None  # listing skills the model cannot load would only mislead it
    index = _skills(prompt).index()
    if not index:
        return None
    text = "When a task matches a skill, call load_skill with its name and follow it.\n" + index
    return PromptPart(name="skills", title="Skills", text=text)


def _instructions_key(prompt: SystemPrompt) -> tuple[str, float]:
    path = _instruction_file(Path(prompt.runtime.project_root))
    return (str(path), path.stat().st_mtime) if path else ("", 0.0)


def _memories_part(prompt: SystemPrompt, tools: tuple[str, ...]) -> PromptPart | None:
    settings = getattr(prompt.toolbox, "settings", None) or ToolSettings()
    if "memory_search" not in tools or settings.memory.prompt_budget <= 0:
        return None
    memory = Memory(
        path=memory_path(prompt.runtime.project_root, settings.memory), settings=settings.memory
    )
    query = prompt.topic
    try:
        text = memory.for_prompt(query, settings.memory.prompt_budget)
    except (LiveforgeError, sqlite3.Error) as exc:
        text = f"(memories unavailable: {exc})"
    if not text:
        return None
    title = "Memories of this project (memory_search finds more; memory_forget drops wrong ones)"
    return PromptPart(name="memories", title=title, text=text)


@forwardpy.impl(SystemPrompt.focus)
def focus(self: SystemPrompt, text: str) -> None:
    self.topic = text


@forwardpy.impl(SystemPrompt.parts)
def parts(self: SystemPrompt) -> list[PromptPart]:
    cache = self.cache
    # statuses too: a rollback changes the program without adding to the history
    changes = tuple((c.id, c.status.value) for c in self.runtime.history())
    key = (
        tuple(t.name for t in self.toolbox.tools()),
        changes,
        _instructions_key(self),
        _skills(self).signature(),
    )
    if cache.key != key:
        built = [
            PromptPart(name="identity", title="", text=IDENTITY),
            _tools_part(self),
            _project_part(self),
            _instructions_part(self),
            _skills_part(self),
        ]
        cache.parts = [p for p in built if p is not None and p.text.strip()]
        cache.key = key
    memories = _memories_part(self, key[0])  # last: the parts before it stay a stable prefix
    return [*cache.parts, memories] if memories else list(cache.parts)


@forwardpy.impl(SystemPrompt.render)
def render(self: SystemPrompt) -> str:
    sections = []
    for part in self.parts():
        sections.append(f"# {part.title}\n\n{part.text}" if part.title else part.text)
    return "\n\n".join(sections)
