"""The frameworks people run, installed for real (click, toolz, Flask): a body-only edit of a
decorated function updates the function behind the framework's object in place, without
running the decorator again; every reference, old or new, runs the new code; a changed
decorator runs again with the registries as a fresh import has them; undo is exact. Each
test builds a real module on sys.path and compares it with a fresh import of its source."""

from __future__ import annotations

import inspect
import types

import pytest
from click.testing import CliRunner
from kernel_support import Project, src

from liveforge import Runtime
from liveforge.errors import PatchExecutionError

CLI = src(
    """
    import click


    @click.group()
    def cli():
        pass


    @cli.command()
    def hello():
        \"\"\"Say hello.\"\"\"
        click.echo("hello v1")


    @cli.command()
    def bye():
        click.echo("bye v1")
    """
)


def _run(group: object, *args: str) -> str:
    return CliRunner().invoke(group, list(args)).output  # type: ignore[arg-type]


def _fresh(project: Project, rt: Runtime, mod: types.ModuleType) -> types.ModuleType:
    """A fresh import of the module's current source, under another name."""
    return project.module(rt.source(mod.__name__))


def _commands(project: Project, rt: Runtime, mod: types.ModuleType) -> tuple[list[str], list[str]]:
    """The live group's command names, and a fresh import's."""
    return list(mod.cli.commands), list(_fresh(project, rt, mod).cli.commands)


def test_a_click_command_body_edit_keeps_its_command_and_every_reference(
    project: Project, rt: Runtime
) -> None:
    """A body-only patch of a `@cli.command()` keeps `cli.commands` as a fresh import has it;
    the command object kept from before, the group and the name all run the new code."""
    mod = project.module(CLI)
    kept = mod.hello
    change = rt.patch(
        f"{mod.__name__}.hello", '@cli.command()\ndef hello():\n    click.echo("hello v2")\n'
    )
    assert mod.hello is kept and mod.cli.commands["hello"] is kept
    assert _run(mod.cli, "hello") == "hello v2\n"
    assert _run(kept) == "hello v2\n"
    names, fresh = _commands(project, rt, mod)
    assert names == fresh == ["hello", "bye"]
    assert any("its decorators (@cli.command()) not run again" in n for n in change.notes)


def test_a_click_command_docstring_edit_reaches_its_help(project: Project, rt: Runtime) -> None:
    """The help click copied from the docstring follows a body-only edit of it, as a fresh
    import's would."""
    mod = project.module(CLI)
    rt.patch(
        f"{mod.__name__}.hello",
        '@cli.command()\ndef hello():\n    """Greet warmly."""\n    click.echo("hi")\n',
    )
    assert "Greet warmly." in _run(mod.cli, "--help")
    assert mod.hello.help == _fresh(project, rt, mod).hello.help == "Greet warmly."
    rt.rollback()
    assert mod.hello.help == "Say hello." and "Say hello." in _run(mod.cli, "--help")


@pytest.mark.parametrize("decorator", ["@cli.command()", '@cli.command("hello")'])
def test_undoing_a_click_command_patch_restores_the_command(
    project: Project, rt: Runtime, decorator: str
) -> None:
    """Rolling back a patch of a click command (the same decorator, or one that now names
    the command) leaves `cli.commands` whole and `cli hello` working, and the runtime
    reports memory and files in sync."""
    mod = project.module(CLI)
    kept = mod.hello
    change = rt.patch(f"{mod.__name__}.hello", f'{decorator}\ndef hello():\n    click.echo("v2")\n')
    assert _run(mod.cli, "hello") == "v2\n" and _run(kept) == "v2\n"
    rt.rollback(change.id)
    assert list(mod.cli.commands) == ["hello", "bye"] and mod.cli.commands["hello"] is kept
    assert _run(mod.cli, "hello") == "hello v1\n"
    assert rt.diff() == ""


def test_two_click_patches_rolled_back_together_restore_both_commands(
    project: Project, rt: Runtime
) -> None:
    """Two changes of one module, undone with one rollback of the first, leave both
    commands as they were."""
    mod = project.module(CLI)
    first = rt.patch(
        f"{mod.__name__}.hello", '@cli.command("hello")\ndef hello():\n    click.echo("h2")\n'
    )
    rt.patch(f"{mod.__name__}.bye", '@cli.command()\ndef bye():\n    click.echo("b2")\n')
    assert (_run(mod.cli, "hello"), _run(mod.cli, "bye")) == ("h2\n", "b2\n")
    assert len(rt.rollback(first.id)) == 2
    assert list(mod.cli.commands) == ["hello", "bye"]
    assert (_run(mod.cli, "hello"), _run(mod.cli, "bye")) == ("hello v1\n", "bye v1\n")
    assert rt.diff() == ""


def test_a_click_command_renamed_by_its_decorator_loses_its_old_key(
    project: Project, rt: Runtime
) -> None:
    """`@cli.command("ciao")` on `bye`: the group has `ciao` where `bye` stood, and no `bye`,
    as a fresh import; the command object kept from before is the one under the new key;
    rollback restores `bye`."""
    mod = project.module(CLI)
    kept = mod.bye
    rt.patch(f"{mod.__name__}.bye", '@cli.command("ciao")\ndef bye():\n    click.echo("ciao")\n')
    names, fresh = _commands(project, rt, mod)
    assert names == fresh == ["hello", "ciao"]
    assert mod.cli.commands["ciao"] is kept and _run(mod.cli, "ciao") == "ciao\n"
    rt.rollback()
    assert list(mod.cli.commands) == ["hello", "bye"] and _run(mod.cli, "bye") == "bye v1\n"


def test_a_click_command_whose_function_is_renamed_leaves_the_group(
    project: Project, rt: Runtime
) -> None:
    """`def bye` renamed `def ciao` in a module patch: the group holds `hello` and `ciao`
    only, as a fresh import; rollback puts `bye` back and takes `ciao` out."""
    mod = project.module(CLI)
    source = rt.source(mod.__name__).replace("def bye():", "def ciao():")
    change = rt.patch_module(mod.__name__, source)
    names, fresh = _commands(project, rt, mod)
    assert names == fresh == ["hello", "ciao"]
    assert any("taken out of" in note and "cli.commands" in note for note in change.notes)
    rt.rollback()
    assert list(mod.cli.commands) == ["hello", "bye"] and not hasattr(mod, "ciao")


TOOLZ = src(
    """
    from toolz import curry, memoize

    CALLS = []


    @curry
    def add(a, b):
        \"\"\"Add two numbers.\"\"\"
        return a + b


    @curry
    def merge(a, b):
        return {**a, **b}


    merge.__doc__ = "Merge two dicts, the second winning."


    @memoize
    def square(x):
        CALLS.append(x)
        return x * x
    """
)


def test_a_curry_reference_taken_before_the_patch_runs_the_new_code(
    project: Project, rt: Runtime
) -> None:
    """toolz `@curry`: the curry object kept from before, and a partial application made
    from it before the patch, run the new body, like a fresh import's; rollback returns the
    old code to all of them."""
    mod = project.module(TOOLZ)
    ref, add_one = mod.add, mod.add(1)
    new = '@curry\ndef add(a, b):\n    """Add."""\n    return a + b + 100\n'
    rt.patch(f"{mod.__name__}.add", new)
    assert mod.add is ref
    assert ref(1, 2) == add_one(2) == _fresh(project, rt, mod).add(1, 2) == 103
    assert ref.__doc__ == "Add."
    rt.rollback()
    assert ref(1, 2) == add_one(2) == 3 and ref.__doc__ == "Add two numbers."


def test_a_docstring_set_after_a_curry_definition_survives_a_body_edit(
    project: Project, rt: Runtime
) -> None:
    """`merge.__doc__ = ...` after `@curry def merge`: a body edit of merge keeps that
    docstring, as a fresh import (where the statement runs after the definition) has it."""
    mod = project.module(TOOLZ)
    rt.patch(f"{mod.__name__}.merge", "@curry\ndef merge(a, b):\n    return {**b, **a}\n")
    assert mod.merge({"k": 1}, {"k": 2}) == {"k": 1}
    assert mod.merge.__doc__ == _fresh(project, rt, mod).merge.__doc__
    assert mod.merge.__doc__ == "Merge two dicts, the second winning."


def test_a_memoized_function_edited_answers_from_the_new_code(
    project: Project, rt: Runtime
) -> None:
    """toolz `@memoize`: after a body edit, a reference taken before gives the new code's
    results, not answers cached from the old code; the decorator did not run again."""
    mod = project.module(TOOLZ)
    ref = mod.square
    assert ref(3) == 9
    rt.patch(
        f"{mod.__name__}.square",
        "@memoize\ndef square(x):\n    CALLS.append(x)\n    return x * x + 1\n",
    )
    assert mod.square is ref and ref(3) == 10 == _fresh(project, rt, mod).square(3)
    rt.rollback()
    assert ref(3) == 9


def test_a_memoized_function_run_again_by_a_future_import_is_merged(
    project: Project, rt: Runtime
) -> None:
    """`from __future__ import annotations` added runs every definition again, `@memoize`
    too, making a new function of toolz's own module: it is merged into the one a reference
    taken before holds, which runs the new body at its new lines (the name used to take the
    new function silently, the reference kept the old body and lines)."""
    mod = project.module(TOOLZ)
    ref = mod.square
    source = "from __future__ import annotations\n" + rt.source(mod.__name__).replace(
        "    return x * x\n", "    if x == 13:\n        raise ValueError(x)\n    return x * x + 1\n"
    )
    rt.patch_module(mod.__name__, source)
    assert mod.square is ref and ref(3) == 10 == _fresh(project, rt, mod).square(3)
    with pytest.raises(ValueError) as raised:
        ref(13)
    line = source.splitlines().index("        raise ValueError(x)") + 1
    assert raised.traceback[-1].lineno + 1 == line
    rt.rollback()
    assert mod.square is ref and ref(13) == 169


def test_a_memoized_function_whose_signature_changed_is_merged(
    project: Project, rt: Runtime
) -> None:
    """A changed signature runs `@memoize` again: a reference taken before runs the new code
    (it used to keep the old one, with no note)."""
    mod = project.module(TOOLZ)
    ref = mod.square
    rt.patch(f"{mod.__name__}.square", "@memoize\ndef square(x, y=1):\n    return x * x + y\n")
    assert mod.square is ref and ref(3) == 10 == _fresh(project, rt, mod).square(3)


REGISTERING = src(
    """
    DECORATIONS = []
    ROUTES = {}


    def route(path):
        def register(func):
            DECORATIONS.append(path)
            ROUTES[path] = func
            return func
        return register


    @route("/")
    def index():
        return "v1"


    @route("/about")
    def about():
        return "about v1"
    """
)


def test_a_registering_decorator_does_not_run_again_for_a_body_edit(
    project: Project, rt: Runtime
) -> None:
    """Body-only edits leave a registering decorator's call log as it was (two entries), the
    registry holds the same functions, which run the new code; a changed decorator runs."""
    mod = project.module(REGISTERING)
    index = mod.index
    for n in range(2, 4):
        rt.patch(f"{mod.__name__}.index", f'@route("/")\ndef index():\n    return "v{n}"\n')
    assert mod.DECORATIONS == ["/", "/about"]
    assert mod.ROUTES["/"] is index and index() == "v3"
    rt.patch(f"{mod.__name__}.index", '@route("/home")\ndef index():\n    return "home"\n')
    assert mod.DECORATIONS == ["/", "/about", "/home"]
    assert list(mod.ROUTES) == list(_fresh(project, rt, mod).ROUTES) == ["/home", "/about"]
    rt.rollback_to()
    assert mod.DECORATIONS == ["/", "/about", "/home"]  # a call log is history, not state
    assert list(mod.ROUTES) == ["/", "/about"] and mod.ROUTES["/"] is index and index() == "v1"


def test_a_body_edit_of_the_second_definition_of_one_name_updates_that_one(
    project: Project, rt: Runtime
) -> None:
    """`singledispatch` implementations all named `_`: a body edit of the first updates the
    first (which only the dispatch registry holds), and no other."""
    mod = project.module(
        src(
            """
            from functools import singledispatch


            @singledispatch
            def show(x):
                return "any"


            @show.register
            def _(x: int):
                return "int v1"


            @show.register
            def _(x: str):
                return "str v1"
            """
        )
    )
    ref = mod.show
    source = rt.source(mod.__name__).replace('"int v1"', '"int v2"')
    rt.patch_module(mod.__name__, source)
    assert (ref(1), ref("s"), ref(1.5)) == ("int v2", "str v1", "any")
    assert len(ref.registry) == len(_fresh(project, rt, mod).show.registry) == 3
    source = source.replace('return "any"', 'return "anything"')
    rt.patch_module(mod.__name__, source)
    assert (ref(1), ref(1.5)) == ("int v2", "anything") and mod.show is ref


def test_a_cached_property_body_edit_reaches_new_instances(project: Project, rt: Runtime) -> None:
    """`functools.cached_property` on a user class: after a body edit, instances compute the
    new value (those that cached the old one keep it, as their own state)."""
    mod = project.module(
        src(
            """
            from functools import cached_property


            class Box:
                @cached_property
                def size(self):
                    return 1
            """
        )
    )
    box = mod.Box()
    assert box.size == 1
    rt.patch(f"{mod.__name__}.Box.size", "@cached_property\ndef size(self):\n    return 2\n")
    assert mod.Box().size == 2 == _fresh(project, rt, mod).Box().size and box.size == 1


FLASK = src(
    """
    from flask import Flask

    app = Flask(__name__)


    @app.route("/")
    def index():
        return "index v1"
    """
)


def test_a_flask_view_is_edited_after_the_app_served_a_request(
    project: Project, rt: Runtime
) -> None:
    """After the app served a request (Flask then refuses `app.route`), a body-only edit of a
    view is applied: the next request gets the new body; rollback returns the old one."""
    mod = project.module(FLASK)
    client = mod.app.test_client()
    assert client.get("/").text == "index v1"
    rt.patch(f"{mod.__name__}.index", '@app.route("/")\ndef index():\n    return "index v2"\n')
    assert client.get("/").text == "index v2"
    rt.rollback()
    assert client.get("/").text == "index v1"


def test_a_new_flask_route_after_the_first_request_is_refused_with_flask_s_reason(
    project: Project, rt: Runtime
) -> None:
    """A changed route decorator must run again, which Flask refuses once the app served a
    request: the patch is refused with Flask's own words, and the app serves as before."""
    mod = project.module(FLASK)
    client = mod.app.test_client()
    assert client.get("/").text == "index v1"
    with pytest.raises(PatchExecutionError, match="can no longer be called on the application"):
        rt.patch(f"{mod.__name__}.index", '@app.route("/new")\ndef index():\n    return "new"\n')
    assert client.get("/").text == "index v1" and client.get("/new").status_code == 404


def test_a_saved_flask_view_edit_reloads_after_the_app_served_a_request(
    project: Project, rt: Runtime
) -> None:
    """The path a watched save takes: the file saved with a view's body changed, then
    reloaded, after the app served a request; the next request gets the new body."""
    mod = project.module(FLASK)
    client = mod.app.test_client()
    assert client.get("/").text == "index v1"
    rt.source(mod.__name__)  # the runtime takes the module's source as it was imported
    path = project.root / f"{mod.__name__}.py"
    path.write_text(path.read_text().replace("index v1", "index v2"))
    change = rt.reload(mod.__name__)
    assert client.get("/").text == "index v2"
    assert change.updated == ["index"]


def test_a_flask_route_added_before_the_first_request_serves(project: Project, rt: Runtime) -> None:
    """Before the app served a request Flask takes new routes: a view added by a module
    patch serves its URL (and, as Flask's URL rules know it by name, still does after the
    patch is rolled back, rather than failing)."""
    mod = project.module(FLASK)
    about = '\n\n@app.route("/about")\ndef about():\n    return "about"\n'
    rt.patch_module(mod.__name__, rt.source(mod.__name__) + about)
    assert "about" in mod.app.view_functions
    assert mod.app.test_client().get("/about").text == "about"
    rt.rollback()
    assert not hasattr(mod, "about") and mod.app.test_client().get("/about").text == "about"


def test_a_flask_route_a_rolled_back_change_added_still_serves_and_its_note_says_why(
    project: Project, rt: Runtime
) -> None:
    """A change adds a route, the app serves it, the change is rolled back: the view stays
    in `app.view_functions` (its URL rule names it) and still serves, where a fresh import
    of the restored source has no such route; the rolled-back change's note names the
    table's entry, says the view may still be called there and that a restart drops it."""
    mod = project.module(FLASK)
    about = '@app.route("/about")\ndef about():\n    return "about"\n'
    change = rt.patch(f"{mod.__name__}.about", about)
    client = mod.app.test_client()
    assert client.get("/about").text == "about"
    assert rt.rollback() == [change]
    assert not hasattr(mod, "about") and client.get("/about").text == "about"
    assert "about" not in _fresh(project, rt, mod).app.view_functions
    (note,) = [n for n in change.notes if n.startswith("about: this change defined it")]
    assert f"{mod.__name__}.app.view_functions['about']" in note
    assert "may still be called there" in note and "Restart the program to drop it" in note


def test_a_renamed_flask_view_is_said_to_be_still_held_by_the_app(
    project: Project, rt: Runtime
) -> None:
    """Flask knows a view by its name in its URL rules too, so a renamed view's old function
    stays in `app.view_functions` (taking it out would break the rule), and the change's
    note says so, with what to do."""
    mod = project.module(FLASK)
    source = rt.source(mod.__name__).replace("def index", "def home")
    change = rt.patch_module(mod.__name__, source)
    note = next(n for n in change.notes if n.startswith("index: removed"))
    assert f"{mod.__name__}.app.view_functions" in note and "Restart" in note
    assert mod.app.test_client().get("/").status_code == 200


def test_a_curry_function_moved_by_an_edit_above_it_keeps_exact_lines(
    project: Project, rt: Runtime
) -> None:
    """A definition above a `@curry` function grows: the curried function's code moves
    with its statement (tracebacks and inspect stay exact), and a later body edit still
    updates it in place, not running `curry` again."""
    mod = project.module(TOOLZ)
    ref = mod.merge
    rt.patch(f"{mod.__name__}.add", "@curry\ndef add(a, b):\n\n\n    return a + b\n")
    line = rt.source(mod.__name__).splitlines().index("def merge(a, b):")  # 0-based: @curry
    assert ref.func.__code__.co_firstlineno == line
    change = rt.patch(f"{mod.__name__}.merge", "@curry\ndef merge(a, b):\n    return {**b, **a}\n")
    assert mod.merge is ref and ref({"k": 1}, {"k": 2}) == {"k": 1}
    assert any("not run again" in note for note in change.notes)


def test_a_curry_function_defined_again_then_moved_keeps_exact_lines(
    project: Project, rt: Runtime
) -> None:
    """A `@curry` function whose default reads a patched constant runs again (a new curry
    object); moved after that, the new object's function moves with its statement (the
    move used to shift the function the statement made before it ran again)."""
    source = src(
        """
        from toolz import curry

        SCALE = 2


        def above():
            return 0


        @curry
        def scaled(x, y=SCALE):
            return x * y
        """
    )
    mod = project.module(source)
    grown = source.replace("return 0", "\n    return 0")
    rt.patch_module(mod.__name__, grown)  # moved down once
    rt.patch(f"{mod.__name__}.SCALE", "SCALE = 3\n")  # `scaled` runs again
    rt.patch_module(mod.__name__, rt.source(mod.__name__).replace("\n    return 0", "return 0"))
    line = rt.source(mod.__name__).splitlines().index("@curry") + 1
    assert mod.scaled.func.__code__.co_firstlineno == line
    assert inspect.getsource(mod.scaled.func).startswith("@curry\n")
    assert mod.scaled(2) == 6


def test_a_flask_view_whose_route_decorator_is_removed_is_said_to_still_serve(
    project: Project, rt: Runtime
) -> None:
    """A view patched without its `@app.route` line: Flask's URL rule and view table keep the
    function (taking it out would break the rule), which now runs the new body, where a fresh
    import would have no route. The change's note says so, with what to do."""
    mod = project.module(FLASK)
    client = mod.app.test_client()
    assert client.get("/").text == "index v1"
    change = rt.patch(f"{mod.__name__}.index", 'def index():\n    return "index v3"\n')
    note = next(n for n in change.notes if n.startswith("index: its decorators changed"))
    assert f"{mod.__name__}.app.view_functions" in note and "Restart" in note
    assert client.get("/").text == "index v3"
    rt.rollback()
    assert client.get("/").text == "index v1"
