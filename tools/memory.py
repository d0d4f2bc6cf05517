"""Memory across sessions: notes worth keeping about this project (how to run things, the
user's preferences, decisions and their reasons), found again by search in later sessions.

Write one fact per memory, in words a later search will use. Memories are plain data the user
sees and edits (`liveforge memory list`).
"""

from __future__ import annotations

from liveforge.declarations.memory import Memory, memory_path
from liveforge.declarations.permissions import effect
from liveforge.tools._context import runtime, settings

__all__ = ["memory_forget", "memory_search", "memory_write"]


def _memory() -> Memory:
    config = settings().memory
    return Memory(path=memory_path(runtime().project_root, config), settings=config)


@effect("write")
def memory_write(text: str, tags: list[str] | None = None) -> str:
    """Remember something for later sessions of this project.

    Args:
        text: one self-contained fact, decision or preference
        tags: a few words to group it by, e.g. ["testing", "ci"]
    """
    item = _memory().write(text, tags)
    return f"remembered {item.line()}"


@effect("read")
def memory_search(query: str, limit: int = 5) -> str:
    """Find memories of this project by words (best first); an empty query lists the newest.

    Args:
        query: words of what you are looking for
        limit: how many memories at most
    """
    found = _memory().search(query, limit)
    if not found:
        return "no memories match" if query.strip() else "no memories yet"
    return "\n".join(item.line() for item in found)


@effect("write")
def memory_forget(memory_id: int) -> str:
    """Delete a memory that is wrong or outdated.

    Args:
        memory_id: the number shown as #N by memory_search
    """
    return f"forgot {_memory().forget(memory_id).line()}"
