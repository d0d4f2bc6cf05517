"""liveforge's command line: one module per command group, registered on one parser.

Exit codes (also in docs/commands.md):

    0    success
    1    a check failed: verify, test or apply's checks did not pass, `run` ended without success
    2    usage or configuration error: bad arguments, bad configuration, no model provider
         configured, a missing optional dependency
    3    the operation failed: unknown target, a patch that does not apply, a tool error,
         a sandbox that could not start
    4    `run`: a tool call was refused (approval nobody gave, the mode, a deny rule, a
         plugin), so the task may not be done; `--json` lists the calls under `refused`
    130  interrupted (Ctrl-C)
"""

from liveforge.cli._exits import CommandError, ExitCode

__all__ = ["CommandError", "ExitCode"]
