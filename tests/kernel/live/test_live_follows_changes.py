"""What a change reaches beyond the definition itself, on code shaped like real programs:
callbacks a factory made at import, a decorator that now returns another kind of object,
descriptors with `__set_name__`, plugin registries filled by `__init_subclass__`, and values
computed at import from a changed constant. Each is updated as a fresh import would have it,
or named in a note on the `Change`; rollback restores what was there."""

from __future__ import annotations

import pytest
from kernel_support import Project, src

from liveforge import PatchError, Runtime

EVENTS = """
    import functools

    HANDLERS = []
    ROUTES = {}


    def on(event, scale=1):
        def handler(payload):
            return (event, payload * scale)
        return handler


    def keyed(prefix):
        return lambda key: f"{prefix}:{key}"


    class Bus:
        def subscriber(self, name):
            def deliver(message):
                return f"{name} got {message}"
            return deliver


    HANDLERS.append(on("start"))
    HANDLERS.append(functools.partial(on("stop", 2), 5))
    ROUTES["cache"] = keyed("c")
    DELIVER = Bus().subscriber("log")
    """


def test_callbacks_a_factory_made_at_import_run_its_new_code(project: Project, rt: Runtime) -> None:
    """Closures, a partial of one, a lambda and a method's inner function made before the
    patch run the new nested code (their free variables are the same); rollback restores
    the old code, object for object."""
    mod = project.module(EVENTS)
    start, stop = mod.HANDLERS
    key, deliver = mod.ROUTES["cache"], mod.DELIVER
    code = start.__code__
    rt.patch(
        f"{mod.__name__}.on",
        "def on(event, scale=1):\n    def handler(payload):\n"
        "        return (event.upper(), payload * scale)\n    return handler\n",
    )
    rt.patch(
        f"{mod.__name__}.keyed", 'def keyed(prefix):\n    return lambda key: f"{prefix}/{key}"\n'
    )
    rt.patch(
        f"{mod.__name__}.Bus.subscriber",
        "def subscriber(self, name):\n    def deliver(message):\n"
        "        return f'{name} <- {message}'\n    return deliver\n",
    )
    assert (start(1), stop(), key("k"), deliver("hi")) == (
        ("START", 1),
        ("STOP", 10),
        "c/k",
        "log <- hi",
    )
    rt.rollback_to()
    assert start.__code__ is code and (start(1), key("k"), deliver("hi")) == (
        ("start", 1),
        "c:k",
        "log got hi",
    )


def test_a_callback_that_cannot_take_the_new_code_is_named_with_its_holder(
    project: Project, rt: Runtime
) -> None:
    """When the new inner function reads other free variables, the callbacks made before
    keep their old code, and the note names each one, where it is held and what to call."""
    mod = project.module(EVENTS)
    change = rt.patch(
        f"{mod.__name__}.on",
        "def on(event, scale=1):\n    label = event * 2\n    def handler(payload):\n"
        "        return (label, payload)\n    return handler\n",
    )
    note = next(n for n in change.notes if "on.<locals>.handler" in n)
    assert f"{mod.__name__}.HANDLERS (a list)" in note and "a functools.partial" in note
    assert "free variables changed" in note and "Call on again" in note
    assert mod.HANDLERS[0](1) == ("start", 1)  # old code, as the note says
    assert mod.on("go")(3) == ("gogo", 3)


CURRY = """
    class curry:
        def __init__(self, func):
            self.func = func

        def __call__(self, *args):
            return self.func(*args)


    @curry
    def add(x, y):
        return x + y


    PIPELINE = [add]
    """


def test_a_decorator_instance_replaced_by_a_plain_function_is_named(
    project: Project, rt: Runtime
) -> None:
    """Dropping a class-based decorator makes the name a plain function: the name and its
    from-import copies take it, the function inside the old instance (which a list still
    holds) forwards to it, so every reference runs the new code, and the note says so;
    rollback brings the instance back, running the old code."""
    mod = project.module(CURRY)
    user = project.module(f"from {mod.__name__} import add\n")
    old = mod.add
    change = rt.patch(f"{mod.__name__}.add", "def add(x, y):\n    return x * y\n")
    note = next(n for n in change.notes if n.startswith("add:"))
    assert f"{mod.__name__}.curry" in note and "forwards every call to it" in note
    assert (mod.add(3, 4), user.add(3, 4), mod.PIPELINE[0](3, 4)) == (12, 12, 12)
    rt.rollback()
    assert mod.add is old and user.add is old and mod.PIPELINE[0](3, 4) == 7


FIELDS = """
    class Field:
        def __init__(self, default=None):
            self.default = default

        def __set_name__(self, owner, name):
            self.owner, self.name = owner, name
            owner.columns = (*getattr(owner, "columns", ()), name)

        def __get__(self, obj, owner=None):
            if obj is None:
                return self
            return obj.__dict__.get(self.name, self.default)


    class Model:
        id = Field(0)
        title = Field("")
    """


def test_a_replaced_descriptor_is_told_its_live_owner(project: Project, rt: Runtime) -> None:
    """New descriptors get `__set_name__` with the live class (as type creation would),
    what that sets on the class matches a fresh import, and rollback undoes it."""
    mod = project.module(FIELDS)
    old_field = mod.Model.__dict__["title"]
    rt.patch(
        f"{mod.__name__}.Model",
        "class Model:\n    id = Field(0)\n    title = Field('untitled')\n    body = Field('')\n",
    )
    title, body = mod.Model.__dict__["title"], mod.Model.__dict__["body"]
    assert title.owner is mod.Model and body.owner is mod.Model and body.name == "body"
    assert mod.Model.columns == ("id", "title", "body") and mod.Model().title == "untitled"
    rt.patch(f"{mod.__name__}.Model.body", "body = Field('x')")
    assert mod.Model.__dict__["body"].owner is mod.Model and mod.Model().body == "x"
    rt.rollback_to()
    assert mod.Model.__dict__["title"] is old_field and mod.Model.columns == ("id", "title")
    assert not hasattr(mod.Model, "body")


PLUGINS = """
    import weakref

    REGISTRY = {}
    SEEN = weakref.WeakSet()


    class Plugin:
        def __init_subclass__(cls, name="", **kwargs):
            super().__init_subclass__(**kwargs)
            REGISTRY[name or cls.__name__.lower()] = cls


    class Csv(Plugin, name="csv"):
        def load(self, text):
            return text.split(",")


    class Audited:
        def __init_subclass__(cls):
            SEEN.add(cls)


    class Job(Audited):
        def run(self):
            return 1
    """


def test_a_plugin_registry_keeps_the_live_subclass(project: Project, rt: Runtime) -> None:
    """A subclass built again (a class attribute added) under a base whose
    `__init_subclass__` registers it keeps one registry entry, the live class; a hook that
    stored it nowhere the engine can see (a weak set) is named in a note."""
    mod = project.module(PLUGINS)
    csv = mod.Csv
    change = rt.patch(
        f"{mod.__name__}.Csv",
        "class Csv(Plugin, name='csv'):\n    sep = ';'\n\n    def load(self, text):\n"
        "        return text.split(self.sep)\n",
    )
    assert mod.REGISTRY == {"csv": csv} and csv().load("a;b") == ["a", "b"]
    assert any("Plugin.__init_subclass__" in n and "(dict)" in n for n in change.notes)
    change = rt.patch(
        f"{mod.__name__}.Job",
        "class Job(Audited):\n    level = 2\n\n    def run(self):\n        return 2\n",
    )
    note = next(n for n in change.notes if "Audited.__init_subclass__" in n)
    assert "not replayed for the live Job" in note and mod.Job().run() == 2


def test_a_method_body_edit_runs_no_class_hook(project: Project, rt: Runtime) -> None:
    """Only a method's body changed: the class is not built again, so no
    `__init_subclass__` runs and nothing is noted of one; the registry holds the live class
    as a fresh import would, and the method runs the new code."""
    mod = project.module(PLUGINS)
    csv, seen = mod.Csv, set(mod.SEEN)
    change = rt.patch(
        f"{mod.__name__}.Csv.load", "def load(self, text):\n    return text.split(';')\n"
    )
    assert mod.REGISTRY == {"csv": csv} and csv().load("a;b") == ["a", "b"]
    assert set(mod.SEEN) == seen and change.notes == [] and change.updated == ["Csv.load"]
    rt.rollback()
    assert csv().load("a,b") == ["a", "b"] and mod.REGISTRY == {"csv": csv}
    rt.rollback_to()
    assert mod.REGISTRY == {"csv": csv} and csv().load("a,b") == ["a", "b"]


CONSTANTS = """
    import os

    LIMIT = 10
    DOUBLE = LIMIT * 2
    QUAD: int = DOUBLE * 2
    LABEL = f"up to {LIMIT}"
    BOUNDS = (0, min(LIMIT, 100))
    HOME = os.environ.get("HOME", "") + str(LIMIT)


    def clip(x, top=QUAD):
        return min(x, top)
    """


def test_values_computed_from_a_changed_constant_are_computed_again(
    project: Project, rt: Runtime
) -> None:
    """Pure values derived from a patched constant (a chain, an f-string, a builtin call,
    an annotated one) equal a fresh import's, defaults reading them follow, a value made by
    a call the engine cannot see into is named instead, and rollback restores all."""
    mod = project.module(CONSTANTS)
    user = project.module(f"from {mod.__name__} import DOUBLE, QUAD\n")
    clip, home = mod.clip, mod.HOME
    change = rt.patch(f"{mod.__name__}.LIMIT", "LIMIT = 50")
    assert (mod.DOUBLE, mod.QUAD, mod.LABEL, mod.BOUNDS) == (100, 200, "up to 50", (0, 50))
    assert (clip(1000), user.DOUBLE, user.QUAD) == (200, 100, 200)
    assert mod.HOME is home and any(n.startswith("HOME (line 9) read LIMIT") for n in change.notes)
    assert any("QUAD (line 6): computed again" in n for n in change.notes)
    rt.rollback()
    assert (mod.DOUBLE, mod.QUAD, mod.LABEL, clip(1000), user.QUAD) == (20, 40, "up to 10", 40, 40)


def test_registries_lose_classes_a_change_removed_failed_to_add_or_rolled_back(
    project: Project, rt: Runtime
) -> None:
    """A removed plugin leaves the `__init_subclass__` registry, a patch that fails after
    its class statement ran leaves the registry as it was, and rolling back the addition of
    a plugin takes it out again."""
    mod = project.module(PLUGINS)
    name, csv = mod.__name__, mod.Csv
    text = rt.source(name)
    tsv = text.replace('class Csv(Plugin, name="csv")', 'class Tsv(Plugin, name="tsv")')
    change = rt.patch_module(name, tsv)
    assert mod.REGISTRY == {"tsv": mod.Tsv} and any("Csv: removed" in n for n in change.notes)
    rt.rollback()
    assert mod.REGISTRY == {"csv": csv}
    with pytest.raises(PatchError):
        rt.patch_module(name, text + "\n\nclass Xml(Plugin):\n    pass\n\n\nBROKEN = 1 // 0\n")
    assert mod.REGISTRY == {"csv": csv}
    rt.patch(f"{name}.Json", "class Json(Plugin):\n    pass\n")
    rt.rollback()
    assert mod.REGISTRY == {"csv": csv} and not hasattr(mod, "Json")


def test_callbacks_whose_captured_values_the_old_code_computed_are_named(
    project: Project, rt: Runtime
) -> None:
    """When the factory's own code changes what its callbacks capture, the callbacks made
    before run the new inner code and a note says their captured values are the old ones."""
    mod = project.module(EVENTS)
    change = rt.patch(
        f"{mod.__name__}.on",
        "def on(event, scale=1):\n    scale = scale * 10\n    def handler(payload):\n"
        "        return (event, payload * scale)\n    return handler\n",
    )
    note = next(n for n in change.notes if "on.<locals>.handler" in n)
    assert "values it captured (event, scale) were computed by the old on" in note
    assert mod.HANDLERS[0](1) == ("start", 1) and mod.on("go")(1) == ("go", 10)


def test_removing_a_definition_an_earlier_statement_also_binds_is_named(
    project: Project, rt: Runtime
) -> None:
    """`try: from ._fast import X` then `class X`: removing the class leaves X on it until
    the import runs again, and the note says which line to run again."""
    mod = project.module(
        "try:\n    from json import JSONDecoder as Parser\nexcept ImportError:\n    pass\n\n\n"
        "class Parser:\n    kind = 'slow'\n"
    )
    change = rt.patch_module(mod.__name__, rt.source(mod.__name__).split("\n\n\nclass")[0] + "\n")
    assert any(n.startswith("Parser: its definition was removed, and line 1") for n in change.notes)


def test_a_nested_plugin_class_keeps_its_registry_entry(project: Project, rt: Runtime) -> None:
    """A plugin class nested in another class is registered as the live nested class after
    the outer class is patched."""
    mod = project.module(
        src(PLUGINS)
        + "\n\nclass Formats:\n    class Tsv(Plugin, name='tsv'):\n        sep = '\\t'\n"
    )
    tsv = mod.Formats.Tsv
    rt.patch(
        f"{mod.__name__}.Formats",
        "class Formats:\n    class Tsv(Plugin, name='tsv'):\n        sep = '|'\n",
    )
    assert mod.REGISTRY["tsv"] is tsv and tsv.sep == "|"


def test_a_method_decorator_replaced_by_another_kind_of_object_is_named(
    project: Project, rt: Runtime
) -> None:
    """Dropping a class-based descriptor decorator from a method makes it a plain method,
    and the note names the member and the old object's kind."""
    mod = project.module(
        src(CURRY) + "\n\nclass Box:\n    @curry\n    def size(self):\n        return 1\n"
    )
    change = rt.patch(f"{mod.__name__}.Box.size", "def size(self):\n    return 2\n")
    assert any(n.startswith("Box.size: the new definition is a function") for n in change.notes)
    assert mod.Box().size() == 2
