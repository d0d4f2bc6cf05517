"""What a sandbox child is asked to run: the overlay checked, and the request the template
hands to the child it forks (see `_child.child_main`).

    modules = checked_overlay(overlay)
    request = child_request(run_id, "snippet", {"code": code}, modules, policy, project_root)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from liveforge.kernel.boundary._boundary import BoundaryPolicy
from liveforge.kernel.boundary._secrets import without_secrets
from liveforge.kernel.checks._overlayhook import (
    OVERLAY_ENV,
    OVERLAY_MANIFEST,
    OverlayModule,
    save_overlay,
)
from liveforge.kernel.checks._records import RunKind
from liveforge.kernel.checks._runfiles import BOOT_MODULE, write_boot

__all__ = ["checked_overlay", "child_request"]


def checked_overlay(overlay: Iterable[OverlayModule]) -> list[OverlayModule]:
    """The overlay as a list; TypeError or ValueError for an entry that is not an
    `OverlayModule` or a module named twice."""
    modules = list(overlay)
    seen: set[str] = set()
    for module in modules:
        if not isinstance(module, OverlayModule):
            raise TypeError(f"overlay entries must be OverlayModule, not {type(module).__name__}")
        if module.name in seen:
            raise ValueError(f"the overlay names module {module.name!r} twice; pass one source")
        seen.add(module.name)
    return modules


def child_request(
    run_id: str,
    kind: RunKind,
    payload: dict[str, Any],
    modules: list[OverlayModule],
    policy: BoundaryPolicy,
    project_root: Path,
) -> dict[str, Any]:
    """What the child needs; pytest runs also get the overlay on disk (in the scratch
    folder) for xdist workers."""
    request: dict[str, Any] = {
        "kind": kind,
        **payload,
        "run_id": run_id,
        "cwd": str(project_root),
        "sys_path": list(sys.path),
        "memory_mb": policy.memory_mb,
        "filename": f"<verify:{run_id}>",
        "overlay": [asdict(m) for m in modules],
        "environ": without_secrets(os.environ),
        "boundary": policy.to_dict(),
    }
    if kind == "tests":
        scratch = Path(policy.scratch)
        boot = write_boot(scratch)
        save_overlay(modules, scratch)
        request["sys_path"] = [str(project_root), *request["sys_path"], boot]
        plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p]
        request["env"] = {
            "PYTEST_PLUGINS": ",".join([*plugins, BOOT_MODULE]),
            # the boot plugin before the user's own: xdist gives its workers this run's
            # sys.path, and a whole sys.path here would leak into every program the suite
            # starts (a project's own interpreter would import this checkout)
            "PYTHONPATH": os.pathsep.join(
                [boot, *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
            ),
            OVERLAY_ENV: str(scratch / OVERLAY_MANIFEST),
        }
    return request
