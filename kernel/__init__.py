"""liveforge.kernel: the runtime core — module registry, patch engine, changes, sandbox."""
