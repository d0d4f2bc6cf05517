"""Module source as text: what is loaded, from where, and how it splits into statements.

The module registry (each managed module's in-memory and on-disk source, linecache entries
that make `inspect` and tracebacks read the in-memory text), a module's top-level statements
and dotted targets inside it, a project's import roots, and what to say when a project
module fails to import.

Imports: `liveforge.kernel.files` (reading files faithfully).
"""
