"""`liveforge chat`, the interactive front end: the command and its read–run–render loop
(`_app`), the input line with history and completion (`_input`), and the slash commands
(`_slash`). A turn is driven and shown by the parts `run` and `demo` share
(`liveforge.cli.turns._agent`, `liveforge.cli.turns._render`).
"""

from liveforge.cli.chat._app import ChatApp, register

__all__ = ["ChatApp", "register"]
