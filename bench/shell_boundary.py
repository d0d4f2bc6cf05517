"""What the check boundary costs a shell command: `exec` inside it against outside it.

    inside     Shell.run(cmd): the launcher (a Python supervisor, -I -S) mounts the
               project's copy-on-write view, applies limits, Landlock and the parent-death
               signal, forks bash, kills what bash left; the view's changes are then read
    outside    Shell.run(cmd, boundary=False): bash started directly, as a terminal would

Both run the same commands interleaved, so they share the machine's load; the table gives
the median wall time per call and the ratio inside/outside.
Run: `python bench/shell_boundary.py [--runs 30]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import liveforge.impls  # noqa: F401  (the Shell bodies)
from liveforge.declarations.shell import Shell
from liveforge.declarations.tool_settings import ShellSettings
from liveforge.kernel import Runtime
from liveforge.kernel.boundary._boundary import probe

COMMANDS = {
    "true": "true",
    "python -c pass": "python3 -c pass",
    "ls | wc -l": "ls -la | wc -l",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as root:
        rt = Runtime(project_root=root)
        shell = Shell(runtime=rt, settings=ShellSettings())
        abi, reason = probe()
        print(f"isolation: {'landlock ABI ' + str(abi) if abi else 'none (' + str(reason) + ')'}")
        print(f"{'command':<16} {'inside ms':>10} {'outside ms':>11} {'ratio':>7}")
        for label, command in COMMANDS.items():
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(runs):
                for boundary in (True, False):
                    started = time.perf_counter()
                    result = shell.run(command, boundary=boundary)
                    times[boundary].append((time.perf_counter() - started) * 1000)
                    assert result.exit_code == 0, result.output
            inside, outside = (statistics.median(times[b]) for b in (True, False))
            print(f"{label:<16} {inside:>10.1f} {outside:>11.1f} {inside / outside:>6.1f}x")
        rt.close()


if __name__ == "__main__":
    main()
