"""The files of a run outside its record: the scratch folder and the copy-on-write view of
the project (listed, then removed), what ran (scrubbed, into the record), pytest's junit
XML (kept, scrubbed), the boot plugin
that gives pytest-xdist workers the overlay, and the folders a pytest run names.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from liveforge.kernel import _overlay
from liveforge.kernel._boundary import BoundaryPolicy
from liveforge.kernel._child import JUNIT, OverlayModule, save_overlay
from liveforge.kernel._secrets import Scrubber

__all__ = [
    "BOOT_MODULE",
    "keep_junit",
    "named_paths",
    "remove_scratch",
    "write_boot",
    "write_record",
]

BOOT_MODULE = "_liveforge_sandbox_boot"
BOOT_SOURCE = '''"""Installs the liveforge sandbox overlay in pytest-xdist workers."""
import importlib.util
import sys

_NAME = "_liveforge_sandbox_child"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, {child!r})
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
sys.modules[_NAME].install_overlay_from_env()
'''


def named_paths(args: list[str], root: Path) -> list[str]:
    """Folders holding the files and folders a pytest run names: a check may read what it
    was asked to run, also outside the project (pytest lists the folder above a named one
    to collect it)."""
    found = []
    for arg in args:
        if arg.startswith("-"):
            continue
        path = (root / arg.split("::")[0]).resolve()
        if path.exists() and not path.is_relative_to(root):
            found.append(str(path.parent))
    return found


def remove_scratch(policy: BoundaryPolicy | None, scratch: Path) -> _overlay.Changes:
    """Remove a run's scratch folder and its copy-on-write view; what the view held."""
    shutil.rmtree(scratch, ignore_errors=True)
    view = policy.copy_on_write() if policy is not None else None
    if view is None:
        return _overlay.Changes()
    changed = _overlay.changes(view.upper)
    _overlay.discard(view)
    shutil.rmtree(Path(view.upper).parent, ignore_errors=True)
    return changed


def keep_junit(scratch: Path, folder: Path, scrubber: Scrubber) -> None:
    """pytest's junit XML, from the scratch folder into the record, scrubbed."""
    try:
        data = (scratch / JUNIT).read_bytes()
    except OSError:
        return
    (folder / JUNIT).write_bytes(scrubber.bytes(data))


def write_boot(folder: Path) -> str:
    """The pytest plugin that gives fresh interpreters (xdist workers) the overlay."""
    boot = folder / "boot"
    boot.mkdir()
    child = Path(__file__).with_name("_child.py")
    (boot / f"{BOOT_MODULE}.py").write_text(BOOT_SOURCE.format(child=str(child)), encoding="utf-8")
    return str(boot)


def write_record(
    folder: Path, request: dict[str, Any], modules: list[OverlayModule], scrubber: Scrubber
) -> None:
    """What ran, for people: the code or arguments, the request, the overlay's sources (all
    scrubbed of secret values)."""
    if request["kind"] == "snippet":
        (folder / "code.py").write_text(scrubber.text(request["code"]), encoding="utf-8")
    else:
        (folder / "args.json").write_text(json.dumps(request["args"]), encoding="utf-8")
    save_overlay([replace(m, source=scrubber.text(m.source)) for m in modules], folder)
    # The environment stays out of the record: it may hold credentials.
    described = {k: v for k, v in request.items() if k not in ("overlay", "environ")}
    described["overlay"] = [m.name for m in modules]
    text = json.dumps(described, indent=1)
    (folder / "request.json").write_text(scrubber.text(text), encoding="utf-8")
