"""What the shell tool tests share: a runtime on the project and a full-auto toolbox."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import liveforge.impls  # noqa: F401  (the @impl bodies)
from liveforge.declarations.permissions import UNBOUNDED, Policy, Rules
from liveforge.declarations.tool_settings import ShellSettings, ToolSettings
from liveforge.declarations.toolbox import Toolbox
from liveforge.kernel import Runtime

# these tests are about the tools, not the gate: nothing asks, outside the boundary neither
FULL_AUTO = Policy(mode="full-auto", rules=Rules(allow=(UNBOUNDED,)))


def project_runtime(project: Any) -> Iterator[Runtime]:
    """A runtime on `project`, closed afterwards (for an `rt` fixture)."""
    runtime = Runtime(project_root=project.root)
    yield runtime
    runtime.close()


def make_box(rt: Runtime, **shell_settings: object) -> Toolbox:
    """A toolbox with liveforge's tools, asking nothing, with these shell settings."""
    box = Toolbox(policy=FULL_AUTO, runtime=rt, packages=["liveforge.tools"], limit=8000)
    box.settings = ToolSettings(shell=ShellSettings(**shell_settings))
    return box
