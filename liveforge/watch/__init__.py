"""File saves applied to a running program: `liveforge watch`, `%load_ext liveforge`, and
`start()` from inside a program.

- `_watcher`: the `Watcher` (each save of a watched module reloaded through the runtime's
  patch engine, one line per module) and `start`;
- `_saves`: reading a save whole (settled, half-written held) and putting it in words;
- `_checks`: a save's `--verify`/`--test` checks in the background, superseded by newer saves.
"""

# `__all__` is the public surface; the watcher's other names (`X as X`) stay importable from
# `liveforge.watch`, as they were when it was one module.
from liveforge.watch._watcher import HELD as HELD
from liveforge.watch._watcher import HOLD as HOLD
from liveforge.watch._watcher import RERUN_HINT as RERUN_HINT
from liveforge.watch._watcher import SETTLE as SETTLE
from liveforge.watch._watcher import STEP_MS as STEP_MS
from liveforge.watch._watcher import UNDO_HINT as UNDO_HINT
from liveforge.watch._watcher import Applied, Watcher, modules_of, runs_code, start
from liveforge.watch._watcher import Outcome as Outcome
from liveforge.watch._watcher import describe as describe

__all__ = ["Applied", "Watcher", "modules_of", "runs_code", "start"]
