"""liveforge.tools: the catalogue of tools a model sees.

Each public module here is a *tool module*; the plain functions named in its ``__all__`` are
tools. A tool is a typed callable with a docstring: its JSON schema comes from the signature
and the docstring's ``Args:`` section (``liveforge.declarations.tool_schema``), its result
is compact, bounded text (``liveforge.tools._output``), and it reaches the runtime it works
on through ``runtime()``. Each tool declares its effect with
``liveforge.declarations.permissions.effect`` ("read", "memory", "check", "write",
"execute" or "shell"); the permission policy decides from it whether a call runs, asks or
is refused, and an unmarked tool counts as "execute". The Toolbox
(``liveforge.declarations.toolbox``) finds tool modules here and in the project's own
``<pkg>.tools`` package, in memory too, at every call.

Core tools: inspection (inspect_module, view_source), intel (find, references, complete),
changes (patch, reload, rollback, history, diff, persist), running (execute, verify,
run_tests), files (read_file, write_file, edit_file, apply_patch), shell (exec, process),
memory (memory_write, memory_search, memory_forget).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from liveforge.tools._context import NoRuntime, runtime, settings, using_runtime

__all__ = ["NoRuntime", "runtime", "settings", "using_runtime"]


def __getattr__(name: str) -> Any:
    # imported when first asked for: a command that reads one helper module here (say,
    # `liveforge find` the definition index) does not load the tool settings' models
    if name in __all__:
        from liveforge.tools import _context

        return getattr(_context, name)
    raise AttributeError(f"module 'liveforge.tools' has no attribute {name!r}")
