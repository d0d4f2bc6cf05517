"""How `liveforge watch` reads a save: whole, in words, and who still runs the old code."""

from __future__ import annotations

import importlib
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from liveforge.kernel import Runtime
from liveforge.watch._saves import OldCode, edits, read_saved, read_settled, shape_notes, suspect

MODULE = """\
RATE = 1


def helper():
    return 1


def price(n):
    return n * RATE


class Cart:
    def total(self):
        return 0
"""


def test_a_save_that_empties_or_guts_a_module_is_suspect():
    """Empty, or more than half of the definitions gone (two at least): suspect; a save that
    removes one definition of several, or only edits, is not."""
    assert suspect(MODULE, "") == "the file is empty: it would remove RATE, helper, price, Cart"
    assert suspect(MODULE, "RATE = 1\n") == ("it removes 3 of 4 definitions (helper, price, Cart)")
    assert suspect(MODULE, MODULE.replace("def helper():\n    return 1\n", "")) is None
    assert suspect(MODULE, MODULE.replace("n * RATE", "n")) is None
    assert suspect("", "") is None  # nothing to lose


def test_edits_name_what_a_save_changes():
    """Updated, added and removed names; a class whose method changed is named by the
    method."""
    saved = MODULE.replace("return 0", "return 1").replace("def helper", "def assist")
    assert edits(MODULE, saved) == "~Cart.total +assist -helper"
    assert edits(MODULE, "def broken(:\n") == ""


def test_shape_notes_name_signatures_and_dataclass_fields():
    """A changed signature and changed dataclass fields each get a note; a body edit none."""
    before = "import dataclasses\n\n@dataclasses.dataclass\nclass Item:\n"
    before += "    a: int\n    b: int = 2\n"
    after = before.replace("    b: int = 2\n", "") + "\ndef f(x, y=1):\n    return x\n"
    assert shape_notes(before, after) == [  # f is new: not a changed signature
        "Item fields (a, b=…) -> (a): Item.__init__ changed, calls made for the old fields "
        "raise TypeError"
    ]
    assert shape_notes(after, after.replace("def f(x, y=1)", "def f(x)")) == [
        "signature f(x, y=1) -> f(x)"
    ]
    assert shape_notes(after, after.replace("return x", "return y")) == []


def test_reading_waits_for_an_editor_that_truncates_then_writes(tmp_path: Path):
    """A file emptied then written 100 ms later is read once written; a file that stays
    empty is returned after the hold."""
    path = tmp_path / "mod.py"
    path.write_text(MODULE)
    path.write_text("")
    writer = threading.Timer(0.1, path.write_text, [MODULE.replace("n * RATE", "n * 2")])
    writer.start()
    [saved] = read_settled([str(path)], 0.05, 1.0, lambda s: not (s.text or "").strip())
    writer.join()
    assert saved.text == MODULE.replace("n * RATE", "n * 2")
    path.write_text("")
    [empty] = read_settled([str(path)], 0.05, 0.2, lambda s: not (s.text or "").strip())
    assert empty.text == "" and empty.stamp == read_saved(str(path)).stamp


@pytest.fixture
def live_module(tmp_path: Path) -> Iterator[tuple[Runtime, str, Path]]:
    """A real module on sys.path under a fresh name, and a runtime over its folder."""
    name = f"lfsaves_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(LOOPING)
    sys.path.insert(0, str(tmp_path))
    importlib.import_module(name)
    rt = Runtime(project_root=tmp_path)
    yield rt, name, path
    sys.modules[name].STOP.set()
    rt.close()
    sys.path.remove(str(tmp_path))
    del sys.modules[name]


LOOPING = """\
import threading
import time

STOP = threading.Event()


def spin():
    while not STOP.is_set():
        time.sleep(0.005)


def steps():
    yield 1
    yield 2


def other():
    return 1
"""


def test_old_code_still_running_is_named_by_thread_and_generator(live_module):
    """After an update of a function a thread is looping in, and of a generator function
    one of whose generators is suspended, both are named; an updated function nobody is
    running is not."""
    rt, name, path = live_module
    module = sys.modules[name]
    threading.Thread(target=module.spin, name="spinner", daemon=True).start()
    started = module.steps()
    next(started)
    while not any(t.name == "spinner" for t in threading.enumerate()):
        time.sleep(0.01)
    before = OldCode(module)
    path.write_text(
        LOOPING.replace("0.005", "0.01").replace("yield 2", "yield 3").replace("1\n", "2\n")
    )
    change = rt.reload(name)
    assert set(change.updated) >= {"spin", "steps", "other"}
    assert before.still_running(change.updated, OldCode(module)) == [
        "spin (thread 'spinner')",
        "steps (a suspended generator)",
    ]
