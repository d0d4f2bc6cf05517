"""Protection: the modules `Runtime` refuses to patch — the kernel (unless the runtime was
made with `allow_kernel_patches`) and the files and folders `protect` names — by import name
and by file, so that another import name does not get around it; and, without the
`outside_project` opt-in, modules that are not the project's own code (`files._owncode`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from liveforge.kernel.errors import NotProjectModule, ProtectedTarget
from liveforge.kernel.files._owncode import ProjectCode, liveforge_file
from liveforge.kernel.history._safety import KERNEL_DIR
from liveforge.kernel.source._sources import ModuleRecord, module_file

__all__ = ["Protection"]

_KERNEL = "liveforge.kernel"


class Protection:
    """Which modules refuse patches: the kernel's, and those `protect` names."""

    def __init__(
        self,
        code: ProjectCode,
        *,
        allow_kernel_patches: bool = False,
        outside_project: bool = False,
    ) -> None:
        self.code = code
        self.allow_kernel_patches = allow_kernel_patches
        self.outside_project = outside_project
        """Patch modules that are not the project's own code (standard library, site-packages,
        an environment under the project) without being asked per patch."""
        self.protected: list[Path] = [KERNEL_DIR]
        """Files and folders whose modules refuse patches, whatever name they were imported
        under (the kernel; `protect` adds more). `allow_kernel_patches` lifts it."""
        # Where a module's file lies does not change while it stays loaded, and every patch
        # asks: the answers per file are kept (resolving paths costs more than a patch).
        self._places: dict[str, tuple[bool, bool, bool]] = {}
        self._reasons: dict[str, str | None] = {}

    def protect(self, path: str | Path) -> None:
        """Refuse patches to the modules loaded from `path` (a file, or a folder and all under
        it), by file location: another import name does not get around it."""
        resolved = Path(path).resolve()
        if resolved not in self.protected:
            self.protected.append(resolved)
            self._places.clear()

    def check(self, target: str, module_name: str, *, by_file: bool = True) -> None:
        """Raise `ProtectedTarget` when `target` (in `module_name`) may not be patched;
        `by_file=False` checks the name only (the file is checked once a path is resolved)."""
        if self.allow_kernel_patches:
            return
        if module_name == _KERNEL or module_name.startswith(_KERNEL + "."):
            raise ProtectedTarget(target)
        filename = module_file(module_name)
        in_kernel, protected, _ = self._place(filename) if filename else (False, False, False)
        if in_kernel or (by_file and protected):
            raise ProtectedTarget(
                target,
                place=f"a protected file ({filename or sys.modules[module_name].__file__})",
                hint="It keeps the running program safe; change what it calls instead.",
            )

    def check_own(self, target: str, record: ModuleRecord, *, outside_project: bool) -> None:
        """Refuse (`NotProjectModule`) a patch of a module whose file is not the project's
        own code, unless this patch or the runtime opted in. liveforge's own replaceable
        code (impls, tools, declarations) is the agent's to patch wherever it is installed."""
        if outside_project or self.outside_project or record.virtual:
            return
        kernel, _, own = self._place(record.filename)
        if own or (kernel and self.allow_kernel_patches):
            return  # liveforge's own code: its own opt-in (allow_kernel_patches) decides
        if record.filename not in self._reasons:
            self._reasons[record.filename] = self.code.reason(record.filename)
        why = self._reasons[record.filename]
        if why is not None:
            raise NotProjectModule(target, module=record.name, filename=record.filename, reason=why)

    def _place(self, filename: str) -> tuple[bool, bool, bool]:
        """Whether `filename` is in the kernel, in a protected file or folder, and in
        liveforge's own replaceable code."""
        place = self._places.get(filename)
        if place is None:
            try:
                resolved = Path(filename).resolve()
            except OSError:
                return (False, False, liveforge_file(filename))
            protected = any(resolved == p or resolved.is_relative_to(p) for p in self.protected)
            place = (resolved.is_relative_to(KERNEL_DIR), protected, liveforge_file(filename))
            self._places[filename] = place
        return place
