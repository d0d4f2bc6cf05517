"""What a Python offers that liveforge does not support yet is said once, at start: by the
command line in its own words, by the API as a RuntimeWarning; nothing on a supported one."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from liveforge.kernel.live import _interpreter
from liveforge.kernel.live._interpreter import NEWEST_TESTED, announce, unsupported


def test_a_supported_python_has_nothing_to_say():
    """3.11 to the newest tested version with the GIL: no warning."""
    for minor in range(11, NEWEST_TESTED[1] + 1):
        assert unsupported((3, minor), free_threaded=False, gil_enabled=True) == []
    assert unsupported((3, 13), free_threaded=True, gil_enabled=True) == []  # GIL turned on


def test_free_threading_and_deferred_annotations_are_named_with_what_to_do():
    """A free-threaded build running without the GIL, and 3.14's lazy annotations."""
    (gil,) = unsupported((3, 13), free_threaded=True, gil_enabled=False)
    assert "free-threaded" in gil and "PYTHON_GIL=1" in gil
    (lazy,) = unsupported((3, 14), free_threaded=False, gil_enabled=True)
    assert "PEP 649" in lazy and "from __future__ import annotations" in lazy
    assert len(unsupported((3, 14), free_threaded=True, gil_enabled=False)) == 2


def test_this_python_is_described_by_its_own_facts():
    """Without arguments, the running interpreter: none of this suite's Pythons (3.11 to
    3.13, GIL builds) has anything unsupported."""
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    expected = sys.version_info[:2] >= (3, 14) or not gil
    assert bool(unsupported()) == expected


def test_the_api_warns_once_per_process(monkeypatch):
    """`announce()` without a front end's voice is a RuntimeWarning, given once."""
    monkeypatch.setattr(_interpreter, "_said", False)
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    monkeypatch.setitem(_config_vars(), "Py_GIL_DISABLED", 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        announce()
        announce()
    assert [str(w.message)[:40] for w in caught] == ["liveforge: this is a free-threaded Pytho"]
    assert caught[0].category is RuntimeWarning


def _config_vars() -> dict:
    import sysconfig

    return sysconfig.get_config_vars()


FREE_THREADED = """
import sys, sysconfig
sysconfig.get_config_vars()["Py_GIL_DISABLED"] = 1  # the facts of a free-threaded build
sys._is_gil_enabled = lambda: False
"""
INSPECT = """
import sys
from liveforge.__main__ import main
sys.exit(main(["--this-python", "--project", sys.argv[1], "inspect"]))
"""


@pytest.mark.parametrize("free_threaded", [True, False])
def test_the_command_line_says_it_at_start_in_its_own_words(tmp_path, free_threaded):
    """`liveforge inspect` on a Python running without the GIL prints one warning line on
    stderr (the runtime it makes says nothing more) and still runs; on this Python, none."""
    (tmp_path / "mod.py").write_text("def f():\n    return 1\n")
    script = (FREE_THREADED if free_threaded else "") + INSPECT
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "free-threaded" in line]
    assert len(warned) == (1 if free_threaded else 0), done.stderr
    if free_threaded:
        assert warned[0].startswith("liveforge: warning: this is a free-threaded Python")
        assert "RuntimeWarning" not in done.stderr
