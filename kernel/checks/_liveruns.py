"""Live checks of a sandbox: a snippet in a fork of this process, inside the boundary its
fresh-import checks get (a mixin of `Sandbox`).

The fork gets a scratch folder of its own, the project root as its working folder, the
project copy-on-write where the platform allows (what it wrote is listed, then discarded),
Landlock rules built ahead and, where they are made ahead, namespaces to join (`_hosts`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.kernel.boundary._boundary import BoundaryPolicy
from liveforge.kernel.boundary._policy import Readable, Scratch
from liveforge.kernel.boundary._rules import Rulesets
from liveforge.kernel.checks import _livefork
from liveforge.kernel.checks._background import later
from liveforge.kernel.checks._hosts import Hosts
from liveforge.kernel.checks._livefork import LiveCheck
from liveforge.kernel.checks._probes import Probe
from liveforge.kernel.checks._runfiles import Afterwards, remove_scratch
from liveforge.kernel.defaults import VERIFY_TIMEOUT

__all__ = ["LiveRuns"]


class LiveRuns:
    """Mixin of `Sandbox`: `run_live`."""

    project_root: Path
    scratch: Scratch
    readable: Readable
    make_ahead: bool
    _afterwards: Afterwards
    _live_rulesets: Rulesets
    _hosts: Hosts
    _stops: int

    if TYPE_CHECKING:

        def _policy(
            self, run_id: str, readable: tuple[str, ...], scratch: Path, options: dict[str, Any]
        ) -> BoundaryPolicy: ...

    def run_live(
        self,
        code: str,
        *,
        timeout: float = VERIFY_TIMEOUT,
        memory_mb: int | None = None,
        network: bool | None = None,
        cpu_seconds: float | None = None,
        on_start: Callable[[int], None] | None = None,
        probes: list[Probe] | None = None,
    ) -> LiveCheck:
        """Run `code` in a fork of this live process (see `_livefork`) inside the same
        boundary as `verify`, from the same settings (see the module's text). `on_start`
        gets the fork's pid once it runs (`_livefork.stop` ends it early; so does
        `stop_running`, also before it forked). `probes` are old objects changes replaced
        that the fork runs the snippet against once more (see `_probes`)."""
        options = {"memory_mb": memory_mb, "network": network, "cpu_seconds": cpu_seconds}
        stops = self._stops

        def started(pid: int) -> None:
            if on_start is not None:
                on_start(pid)
            if self._stops != stops:  # stopped before it forked
                _livefork.stop(pid)

        run_id = f"live-{secrets.token_hex(6)}"
        scratch = self.scratch.folder(run_id)
        policy = self._policy(run_id, self.readable(), scratch, options)
        policy = replace(policy, parent_pid=os.getpid())
        prepared = self._live_rulesets.take(policy)
        host = self._hosts.take() if policy.namespaces and self.make_ahead else None
        try:
            checked = _livefork.run_live(
                code,
                timeout=timeout,
                boundary=policy,
                prepared=prepared,
                cwd=str(self.project_root),
                host=host,
                on_start=started,
                probes=probes,
            )
        finally:
            changed = remove_scratch(policy, scratch, self._afterwards, scratch_later=True)
        # the next live check's shared rules and namespaces, made while this one is read
        later(self._live_rulesets.make_spare, policy)
        later(self._hosts.refill)
        if checked.boundary is not None and changed:
            update = checked.boundary.with_changes(changed.written, changed.deleted)
            checked = checked.model_copy(update={"boundary": update})
        return checked
