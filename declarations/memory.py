# mypy: disable-error-code="empty-body"
"""The agent's memory: short notes kept across sessions, per project, found again by search.

The default store is one SQLite file in the project (``.liveforge/memory.sqlite``) with a
full-text index (FTS5, bm25 ranking, Porter stemming): no server, nothing to install. With an
embedding provider configured (an OpenAI-compatible ``/embeddings`` endpoint, or Ollama),
each memory also gets a vector, and search ranks by both (reciprocal rank fusion). Memories
are plain data: ``liveforge memory list/show/edit/rm`` shows and changes them.

    memory = Memory(path=root / ".liveforge/memory.sqlite", settings=MemorySettings())
    item = memory.write("tests need LIVEFORGE_FAST=1 on CI", tags=["ci"])
    [m.text for m in memory.search("how do the tests run on CI")]
    memory.forget(item.id)
"""

from __future__ import annotations

from pathlib import Path

import forwardpy
from pydantic import BaseModel, Field

from liveforge.declarations.tool_settings import MemorySettings
from liveforge.kernel.errors import LiveforgeError

__all__ = ["EmbeddingError", "Memory", "MemoryItem", "MemoryNotFound", "memory_path"]


class MemoryNotFound(LiveforgeError, LookupError):
    """No memory has this id."""

    def __init__(self, memory_id: int) -> None:
        super().__init__(
            f"no memory #{memory_id}; list them (liveforge memory list, or memory_search)."
        )
        self.memory_id = memory_id


class EmbeddingError(LiveforgeError):
    """The embedding provider could not be reached or answered something unusable."""


class MemoryItem(BaseModel):
    """One memory: its id, text and tags, when it was written, and its search score."""

    id: int
    text: str
    tags: list[str] = Field(default_factory=list)
    created: float
    updated: float
    score: float | None = None
    """Higher is better; set by search only."""

    def line(self) -> str:
        """One line: id, tags, text (newlines shown as ' / ')."""
        tags = f" [{', '.join(self.tags)}]" if self.tags else ""
        return f"#{self.id}{tags} {' / '.join(self.text.splitlines())}"


def memory_path(project_root: str | Path, settings: MemorySettings) -> Path:
    """The memory database of the project at ``project_root``."""
    return Path(project_root).resolve() / settings.path


class Memory(forwardpy.Object):
    """The memories of one project: write, search, list, edit, forget."""

    path: Path
    settings: MemorySettings

    def write(self, text: str, tags: list[str] | None = None) -> MemoryItem:
        """Keep a new memory (the same text again updates the one kept, tags merged)."""
        ...

    def search(self, query: str, limit: int = 5) -> list[MemoryItem]:
        """The memories that best match ``query``, best first (empty query: newest first)."""
        ...

    def get(self, memory_id: int) -> MemoryItem:
        """One memory; `MemoryNotFound` for an unknown id."""
        ...

    def items(self, limit: int | None = None) -> list[MemoryItem]:
        """Every memory, newest first (at most ``limit``)."""
        ...

    def edit(self, memory_id: int, text: str, tags: list[str] | None = None) -> MemoryItem:
        """Replace a memory's text (and its tags when given)."""
        ...

    def forget(self, memory_id: int) -> MemoryItem:
        """Delete a memory; returns what was deleted."""
        ...

    def for_prompt(self, query: str, budget: int) -> str:
        """The memories most relevant to ``query`` as prompt lines, within ``budget`` tokens."""
        ...
