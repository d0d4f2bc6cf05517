"""`liveforge serve`: the gateway — projects' live runtimes served over HTTP and WebSocket.

    liveforge serve --project DIR [--project NAME=DIR ...] [--host 127.0.0.1] [--port 8765]

Clients speak the versioned JSON protocol of `liveforge.gateway.protocol` at `/ws`; a web UI is
at `/`. Sessions, queued runs and idempotency keys live in each project's
`.liveforge/gateway.db` (SQLite), so a restart loses nothing; each project's program runs in
its own worker process, where its sessions run at once (one run per session).
"""

from liveforge.gateway.serving import is_loopback, serve

__all__ = ["is_loopback", "serve"]
