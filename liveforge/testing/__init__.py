"""Test support shipped with liveforge: a fake model provider over real loopback HTTP.

`FakeProvider` serves the Anthropic Messages API, the OpenAI-compatible chat-completions API
and the Gemini API from a script of replies and faults, and records what it received. The
vendors' own SDKs accept its responses, so it can stand in for a real provider in tests and
in the offline demo. See `liveforge.testing.script` for the script builders.

    from liveforge.testing import FakeProvider, fault, reply

    with FakeProvider(script=[reply.text("hi"),
                              reply.tool_call("view_source", {"path": "x"})]) as fake:
        provider = Provider([fake.route("anthropic")])   # or "openai", "gemini"
"""

from liveforge.testing.http import RecordedRequest
from liveforge.testing.script import Fault, Reply, fault, reply
from liveforge.testing.server import FakeProvider

__all__ = ["FakeProvider", "Fault", "RecordedRequest", "Reply", "fault", "reply"]
