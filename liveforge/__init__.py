"""liveforge: a live, self-modifying Python runtime for LLM agents.

Patch a running program by dotted path, check the change in isolation, and persist only what
passed.
"""

from liveforge.kernel.errors import LiveforgeError

__version__ = "0.1.0"

__all__ = ["LiveforgeError", "__version__"]
