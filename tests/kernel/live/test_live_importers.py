"""What other modules took from a changed module follows it, as a fresh import of them would
have it: values a `from`-import copy of a changed constant reaches there (defaults, values
computed from it), names a `from m import *` importer gains or loses, a registry keyed by a
decorator's argument; rollback restores each exactly. Each test builds a small real package
on sys.path, shaped like the toolkit a user reported."""

from __future__ import annotations

import importlib
import sys

from kernel_support import Project, src

from liveforge import Runtime


def _package(project: Project, **modules: str) -> str:
    """Write a package `<prefix>toolkit` with the given modules; returns its name."""
    name = project.name("toolkit")
    (project.root / name).mkdir()
    for module, text in modules.items():
        (project.root / name / f"{module}.py").write_text(src(text))
    importlib.invalidate_caches()
    return name


CORE = """
    from .constants import LIMIT

    LABEL = f"up to {LIMIT}"
    SIZES = list(range(LIMIT))


    class Box:
        cap = LIMIT


    def clamp(x, lo=0, hi=LIMIT):
        return max(lo, min(x, hi))
    """

API = """
    from .core import LIMIT as CAP


    def top(n=CAP):
        return n
    """


def test_a_constant_reaches_what_its_from_import_copies_made_elsewhere(
    project: Project, rt: Runtime
) -> None:
    """After a constant changes, another module that imported it has the defaults and pure
    values a fresh import would make from the new value (and a module importing the copy
    from it in turn); what cannot be made again in place is named, and a reload of that
    module runs it again. Rollback restores every object as it was."""
    pkg = _package(project, __init__="", constants="LIMIT = 10\n", core=CORE, api=API)
    core = importlib.import_module(f"{pkg}.core")
    api = importlib.import_module(f"{pkg}.api")
    clamp, box, sizes = core.clamp, core.Box, core.SIZES
    change = rt.patch(f"{pkg}.constants.LIMIT", "LIMIT = 3\n")
    assert (core.clamp is clamp, clamp.__defaults__, clamp(99)) == (True, (0, 3), 3)
    assert (core.LABEL, api.CAP, api.top()) == ("up to 3", 3, 3)
    assert f"re-bound {pkg}.core.LIMIT to {pkg}.constants.LIMIT" in change.notes
    assert (
        f"{pkg}.core: clamp: defined again (line 11), since its defaults or decorators read LIMIT"
        in change.notes
    )
    stale = [n for n in change.notes if n.startswith(f"{pkg}.core: ") and "not run again" in n]
    assert [n.split(" (")[0] for n in stale] == [f"{pkg}.core: SIZES", f"{pkg}.core: Box"]
    assert all(f"reload {pkg}.core" in n for n in stale)

    reload = rt.reload(f"{pkg}.core")
    assert (core.SIZES, core.Box is box, box.cap) == ([0, 1, 2], True, 3)
    assert [n.split("`")[1] for n in reload.notes if "run again" in n] == [
        "SIZES = list(range(LIMIT))",
        "class Box:",
    ]
    assert rt.reload(f"{pkg}.core").notes == ["the file matches memory; nothing changed"]

    rt.rollback()  # the reload
    assert (core.SIZES is sizes, box.cap) == (True, 10)
    rt.rollback()  # the constant
    assert (clamp.__defaults__, core.LABEL, core.LIMIT, api.CAP, api.top()) == (
        (0, 10),
        "up to 10",
        10,
        10,
        10,
    )
    assert rt.reload(f"{pkg}.core").id == ""  # nothing is stale any more


def test_a_copy_the_importer_binds_again_itself_is_left_alone(
    project: Project, rt: Runtime
) -> None:
    """`from .constants import LIMIT` then `LIMIT = 5`: the module's own binding won at
    import and still does; nothing reading it is touched."""
    pkg = _package(
        project,
        __init__="",
        constants="LIMIT = 10\n",
        own="from .constants import LIMIT\n\nLIMIT = 5\n\n\ndef f(n=LIMIT):\n    return n\n",
    )
    own = importlib.import_module(f"{pkg}.own")
    rt.source(own.__name__)  # managed: its statements are known
    change = rt.patch(f"{pkg}.constants.LIMIT", "LIMIT = 3\n")
    assert (own.LIMIT, own.f()) == (5, 5) and not change.notes


FUNCTOOLZ = """
    __all__ = ["double", "quadruple"]


    def double(x):
        return 2 * x


    def quadruple(x):
        return 4 * x


    def helper(x):
        return x
    """

FUNCTOOLZ_NEW = """
    __all__ = ["triple", "quadruple", "helper"]


    def triple(x):
        return 3 * x


    def quadruple(x):
        return 4 * x


    def helper(x):
        return x
    """

INIT = """
    from .functoolz import *


    def quadruple(x):
        return "the package's own"
    """


def test_a_star_importer_gains_and_loses_the_names_the_module_exports(
    project: Project, rt: Runtime
) -> None:
    """A package that re-exports a module with `from .functoolz import *` gains the names
    the module now lists in `__all__` and loses those it no longer lists, as a fresh import
    would; a name the package binds itself after the star import stays its own; a module
    star-importing the package follows in turn. Rollback restores every binding."""
    pkg = _package(project, __init__=INIT, functoolz=FUNCTOOLZ, user="from . import *\n\nOWN = 1\n")
    package = importlib.import_module(pkg)
    user = importlib.import_module(f"{pkg}.user")
    functoolz = sys.modules[f"{pkg}.functoolz"]
    double, own = package.double, package.quadruple
    change = rt.patch_module(f"{pkg}.functoolz", src(FUNCTOOLZ_NEW))
    assert package.triple is functoolz.triple and package.triple(2) == 6
    assert package.helper is functoolz.helper and package.quadruple is own
    assert not hasattr(package, "double") and user.triple is functoolz.triple
    assert not hasattr(user, "double") and user.quadruple is own
    assert (
        f"{pkg}.triple: added, since `from .functoolz import *` (line 1) now binds it, "
        "as a fresh import would" in change.notes
    )
    assert (
        f"{pkg}.double: removed, since `from .functoolz import *` (line 1) no longer binds it"
        in change.notes
    )
    assert (
        f"{pkg}.user.triple: added, since `from . import *` (line 1) now binds it, "
        "as a fresh import would" in change.notes
    )

    rt.rollback()
    assert package.double is double and user.double is double and package.quadruple is own
    assert not any(hasattr(m, n) for m in (package, user) for n in ("triple", "helper"))
    assert rt.reload(pkg).notes == ["the file matches memory; nothing changed"]


def test_a_name_no_longer_exported_falls_back_to_an_earlier_star_import(
    project: Project, rt: Runtime
) -> None:
    """Two star imports binding one name: when the later module stops exporting it, the
    name is what the earlier one binds, as in a fresh import."""
    pkg = _package(
        project,
        __init__="from .base import *\nfrom .extra import *\n",
        base="def tool():\n    return 'base'\n",
        extra="def tool():\n    return 'extra'\n",
    )
    package = importlib.import_module(pkg)
    assert package.tool() == "extra"
    rt.patch_module(f"{pkg}.extra", "def other():\n    return 'other'\n")
    assert package.tool() == "base" and package.other() == "other"
    rt.rollback()
    assert package.tool() == "extra" and not hasattr(package, "other")
