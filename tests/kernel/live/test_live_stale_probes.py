"""`verify` sees references that still run old code: where a change could not update a
definition in place, the live check also runs the snippet against the old objects something
still holds, and a difference is a divergence naming them."""

from __future__ import annotations

import pytest
from kernel_support import Project, src

from liveforge import Runtime
from liveforge.kernel.checks import _livefork

pytestmark = pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")

TAGGED = src(
    """
    class Tagged:
        def __init__(self, func):
            self.func = func

        def __call__(self, *args):
            return self.func(*args)


    def plain(x):
        return x + 1
    """
)


def test_verify_sees_an_old_object_a_reference_still_holds(project: Project, rt: Runtime) -> None:
    """A plain function given a class-based decorator becomes another kind of object; a
    reference taken before still runs the old code. The snippet (taking its references
    afresh) passes in both runs, yet verify is divergent, naming the name and its holder;
    once that reference is gone, verify passes."""
    mod = project.module(TAGGED)
    holder = project.module(f"from {mod.__name__} import plain\nKEPT = [plain]\n")
    rt.patch(f"{mod.__name__}.plain", "@Tagged\ndef plain(x):\n    return x + 2\n")
    assert holder.KEPT[0](1) == 2 and mod.plain(1) == 3
    result = rt.verify(f"from {mod.__name__} import plain\nplain(1)")
    assert result.value_repr == "3" and result.divergent and not result.ok
    assert f"{mod.__name__}.plain" in result.message and f"{holder.__name__}.KEPT" in result.message
    assert "passed with 2" in result.message
    holder.KEPT.clear()
    again = rt.verify(f"from {mod.__name__} import plain\nplain(1)")
    assert again.ok, again.message


def test_old_objects_that_forward_to_the_new_code_are_no_divergence(
    project: Project, rt: Runtime
) -> None:
    """A class-based decorator dropped: the old instance forwards to the new function, so
    a reference to it runs the new code, and verify agrees."""
    mod = project.module(TAGGED.replace("def plain", "@Tagged\ndef plain"))
    kept = mod.plain
    rt.patch(f"{mod.__name__}.plain", "def plain(x):\n    return x + 2\n")
    assert kept(1) == mod.plain(1) == 3
    assert rt.verify(f"from {mod.__name__} import plain\nassert plain(1) == 3").ok


def test_verify_sees_a_reference_to_a_function_a_later_statement_now_wraps(
    project: Project, rt: Runtime
) -> None:
    """`plain = Tagged(plain)` added after the definition: a list holding `plain` from
    before still calls the bare function; verify is divergent and names that list."""
    mod = project.module(TAGGED.replace("self.func(*args)", "(self.func(*args), 'tagged')"))
    holder = project.module(f"from {mod.__name__} import plain\nKEPT = [plain]\n")
    source = rt.source(mod.__name__)
    change = rt.patch_module(mod.__name__, source + "\n\nplain = Tagged(plain)\n")
    assert any(f"{holder.__name__}.KEPT" in n for n in change.notes), change.notes
    result = rt.verify(f"from {mod.__name__} import plain\nplain(1)")
    assert result.divergent and f"{holder.__name__}.KEPT" in result.message


def test_verify_sees_a_reference_taken_from_an_alias_of_a_function_now_wrapped(
    project: Project, rt: Runtime
) -> None:
    """`plain = Tagged(plain)` added between the definition and `alias = plain`: the alias
    is computed again, and a list holding it from before still calls the bare function;
    verify of a snippet using only the alias is divergent and names the alias and the list."""
    source = TAGGED.replace("self.func(*args)", "(self.func(*args), 'tagged')")
    mod = project.module(source + "\n\nalias = plain\n")
    holder = project.module(f"from {mod.__name__} import alias\nKEPT = [alias]\n")
    wrapped = source + "\n\nplain = Tagged(plain)\n\n\nalias = plain\n"
    rt.patch_module(mod.__name__, wrapped)
    result = rt.verify(f"from {mod.__name__} import alias\nalias(1)")
    assert result.divergent and f"{mod.__name__}.alias" in result.message
    assert f"{holder.__name__}.KEPT" in result.message
