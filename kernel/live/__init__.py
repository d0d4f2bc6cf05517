"""Applying new source to live modules in place (DESIGN §1, ideas 4 and 7).

The engine runs changed statements and merges what they build into the live objects:
functions keep their identity (code, defaults, closures), classes are updated in place, and
what else holds an old object is found and followed — registries, wrappers, functions a
changed function made earlier, later rebindings, values computed from a rebound name,
`from`-import copies in other modules, re-exports. Every step is written to an undo log.
The forwardpy adapter and its extensions live here too.

Imports: `liveforge.kernel.source`, `liveforge.kernel.files`, `liveforge.kernel.history`.
Never `checks`, `boundary` or `runtime`.
"""
