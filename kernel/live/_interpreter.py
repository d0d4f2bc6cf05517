"""What the running Python offers that liveforge does not support yet, said at start.

liveforge edits code objects, classes and line tables in place, the machinery that changes
between Python releases; it is tested on CPython 3.11, 3.12 and 3.13 with the GIL. Where
the interpreter differs in a way that matters, each front end says so once, when it starts
(`announce`): the command line in its own words, the API as a `RuntimeWarning`.

    for line in unsupported():
        print("warning:", line)
"""

from __future__ import annotations

import sys
import sysconfig
import threading
import warnings
from collections.abc import Callable

__all__ = ["NEWEST_TESTED", "announce", "unsupported"]

NEWEST_TESTED = (3, 13)
"""The newest Python version liveforge's suite runs on."""

_said = False
_said_lock = threading.Lock()


def unsupported(
    version: tuple[int, int] | None = None,
    free_threaded: bool | None = None,
    gil_enabled: bool | None = None,
) -> list[str]:
    """One sentence per feature of this interpreter that liveforge does not support yet
    (empty on a supported one); the arguments stand in for the running interpreter's facts.

        >>> unsupported((3, 12), free_threaded=False, gil_enabled=True)
        []
    """
    version = version or (sys.version_info.major, sys.version_info.minor)
    if free_threaded is None:
        free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    if gil_enabled is None:
        is_enabled = getattr(sys, "_is_gil_enabled", None)
        gil_enabled = True if is_enabled is None else bool(is_enabled())
    said: list[str] = []
    if free_threaded and not gil_enabled:
        said.append(
            "this is a free-threaded Python running without the GIL, which liveforge does not "
            "support yet: a function is patched in one step only under the GIL, so another "
            "thread may run a half-updated function. Run with PYTHON_GIL=1 (or `-X gil=1`), "
            "or use a default build."
        )
    if version >= (3, 14):
        said.append(
            f"Python {version[0]}.{version[1]} evaluates annotations lazily (PEP 649), which "
            "liveforge does not support yet: it reads a patched function's annotations "
            "eagerly, so annotations that name what does not exist at run time (an import "
            "under `if TYPE_CHECKING:`) can make the patch fail, and the live function's "
            "annotations are no longer deferred. Add `from __future__ import annotations` "
            "to the modules you patch, or use Python "
            f"{NEWEST_TESTED[0]}.{NEWEST_TESTED[1]}."
        )
    return said


def announce(say: Callable[[str], object] | None = None) -> None:
    """Say each `unsupported` sentence, once per process: through `say` (a front end's own
    words), else as a `RuntimeWarning`. Later calls say nothing."""
    global _said
    with _said_lock:
        if _said:
            return
        _said = True
    for sentence in unsupported():
        if say is not None:
            say(sentence)
        else:
            warnings.warn(f"liveforge: {sentence}", RuntimeWarning, stacklevel=3)
