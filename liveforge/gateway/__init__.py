"""`liveforge serve`: the gateway — one project's live runtime served over HTTP and WebSocket.

    liveforge serve --project DIR [--host 127.0.0.1] [--port 8765]

Clients speak the versioned JSON protocol of `liveforge.gateway.protocol` at `/ws`; a web UI is
at `/`. Sessions, queued runs and idempotency keys live in `.liveforge/gateway.db` (SQLite),
so a restart loses nothing; the project's program runs in its own worker process.
"""

from liveforge.gateway.serving import is_loopback, serve

__all__ = ["is_loopback", "serve"]
