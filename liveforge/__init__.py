"""liveforge: a live, self-modifying Python runtime for LLM agents.

Patch a running program by dotted path, check the change in isolation, and persist only what
passed::

    import liveforge
    rt = liveforge.Runtime(project_root=".")
    rt.patch("pkg.mod.area", "def area(r):\n    return 3.14159 * r * r\n")
    rt.verify("from pkg.mod import area\nassert area(1) > 3")
    rt.persist()

The public API is the kernel's (`liveforge.kernel`): `Runtime`, `Change` and the error tree,
plus the IPython extension hooks (`%load_ext liveforge`, see `liveforge.ipython`).
"""

import typing as _typing
from typing import Any as _Any

from liveforge import kernel as _kernel
from liveforge.kernel import __version__

if _typing.TYPE_CHECKING:
    from liveforge.kernel import *  # noqa: F403  (the kernel's __all__ is the public API)

__all__ = [
    *_kernel.__all__,
    "__version__",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> _Any:
    # the kernel's names, imported when first asked for (`liveforge.Runtime`)
    if name in _kernel.__all__:
        value = getattr(_kernel, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'liveforge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: _Any) -> None:
    """`%load_ext liveforge`: apply file saves before each cell, add the `%lf_*` magics."""
    from liveforge.ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: _Any) -> None:
    """`%unload_ext liveforge`: stop applying saves and close the runtime."""
    from liveforge.ipython import unload_ipython_extension as unload

    unload(ipython)
