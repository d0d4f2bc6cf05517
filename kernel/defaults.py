"""Every default limit of the kernel, defined once; the API, the tools and the CLI use these.

from liveforge.kernel.defaults import VERIFY_TIMEOUT
"""

from __future__ import annotations

__all__ = [
    "CHECK_PROCESSES",
    "EXECUTE_TIMEOUT",
    "KEEP_RUNS",
    "RUNS_FOLDER",
    "TESTS_TIMEOUT",
    "VERIFY_TIMEOUT",
]

#: seconds an in-process `execute` may run before it is interrupted
EXECUTE_TIMEOUT = 5.0
#: seconds a sandboxed verification snippet may run
VERIFY_TIMEOUT = 30.0
#: seconds a sandboxed test run may take
TESTS_TIMEOUT = 300.0
#: processes (threads count too) a sandboxed check may have at once: enough for a test
#: suite's workers and the programs it starts, not for a fork bomb
CHECK_PROCESSES = 512
#: sandbox run records kept in `sandbox_runs/` (the newest ones)
KEEP_RUNS = 50
#: the folder of run records, under the project root, unless a sandbox is given another
RUNS_FOLDER = "sandbox_runs"
