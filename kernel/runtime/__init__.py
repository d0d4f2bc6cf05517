"""`Runtime`, the public patch-and-verify API, and the parts it is made of.

Each part is one concern of the facade — patching, resolving dotted paths, protection,
rollback, checks, persistence, virtual modules, file writes, running code in this process —
built on the subsystems below it.

Imports: every kernel sub-package. (`Runtime` itself is public as `liveforge.Runtime`;
this package's `__init__` imports nothing, so a module here loads without the rest.)
"""
