"""liveforge: a live, self-modifying Python runtime for LLM agents.

Patch a running program by dotted path, check the change in isolation, and persist only what
passed::

    import liveforge
    rt = liveforge.Runtime(project_root=".")
    rt.patch("pkg.mod.area", "def area(r):\n    return 3.14159 * r * r\n")
    rt.verify("from pkg.mod import area\nassert area(1) > 3")
    rt.persist()

The public API is the kernel's (`liveforge.kernel`): `Runtime`, `Change` and the error tree.
"""

from liveforge import kernel as _kernel
from liveforge.kernel import *  # noqa: F403  (the kernel's __all__ is the public API)
from liveforge.kernel import __version__

__all__ = [*_kernel.__all__, "__version__"]
