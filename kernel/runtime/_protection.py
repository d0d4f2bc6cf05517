"""Protection: the modules `Runtime` refuses to patch — the kernel (unless the runtime was
made with `allow_kernel_patches`) and the files and folders `protect` names — by import name
and by file, so that another import name does not get around it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from liveforge.kernel.errors import ProtectedTarget
from liveforge.kernel.history._safety import KERNEL_DIR, protected_file
from liveforge.kernel.source._sources import module_file

__all__ = ["Protection"]

_KERNEL = "liveforge.kernel"


class Protection:
    """Which modules refuse patches: the kernel's, and those `protect` names."""

    def __init__(self, *, allow_kernel_patches: bool = False) -> None:
        self.allow_kernel_patches = allow_kernel_patches
        self.protected: list[Path] = [KERNEL_DIR]
        """Files and folders whose modules refuse patches, whatever name they were imported
        under (the kernel; `protect` adds more). `allow_kernel_patches` lifts it."""

    def protect(self, path: str | Path) -> None:
        """Refuse patches to the modules loaded from `path` (a file, or a folder and all under
        it), by file location: another import name does not get around it."""
        resolved = Path(path).resolve()
        if resolved not in self.protected:
            self.protected.append(resolved)

    def check(self, target: str, module_name: str, *, by_file: bool = True) -> None:
        """Raise `ProtectedTarget` when `target` (in `module_name`) may not be patched;
        `by_file=False` checks the name only (the file is checked once a path is resolved)."""
        if self.allow_kernel_patches:
            return
        if module_name == _KERNEL or module_name.startswith(_KERNEL + "."):
            raise ProtectedTarget(target)
        filename = module_file(module_name)
        in_kernel = filename is not None and Path(filename).resolve().is_relative_to(KERNEL_DIR)
        if in_kernel or (by_file and protected_file(module_name, self.protected)):
            raise ProtectedTarget(
                target,
                place=f"a protected file ({filename or sys.modules[module_name].__file__})",
                hint="It keeps the running program safe; change what it calls instead.",
            )
