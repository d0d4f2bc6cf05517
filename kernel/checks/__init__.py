"""Checks in another process: a fresh import of the overlay, or a fork of the live program.

The pre-imported template and the check made ahead, the sandbox child (the overlay's import
hook, pytest inside it, its error reports), a run's request, files and record, the runner
and its captured output, live forks and the namespaces made ahead for them, and running
both checks alongside.

Imports: `liveforge.kernel.boundary` and `files`. Never `live`, `source` or `runtime`: a check sees
the live program only through the overlay it is handed and the fork it runs in.
"""
