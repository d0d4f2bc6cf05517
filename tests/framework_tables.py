"""A module shaped like a framework's table of functions by name (Flask's `view_functions`,
a hook registry), for tests of what a rollback cannot take out of it."""

from __future__ import annotations

HOOKS_MODULE = """class Registry:
    def __init__(self):
        self.by_name = {}

    def register(self, fn):
        self.by_name[fn.__name__] = fn
        return fn


HOOKS = Registry()
"""
"""`HOOKS.register` keeps each function it decorates in `HOOKS.by_name`, under its name."""
