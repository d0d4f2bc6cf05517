"""What the user saw is what the conversation keeps when a stream breaks mid-chunk."""

from __future__ import annotations

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.impls.providers.sse import SSEParser
from liveforge.testing import reply


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_text_and_an_error_event_in_one_chunk_are_shown_once_and_kept_once(project, fake, protocol):
    """Text that shares a network chunk with an SSE error reaches the screen before the
    error, and the conversation keeps exactly that text, once."""
    root, _ = project
    text = "The fix is in geometry.area"
    fake.add(reply.text(text).chunked(5).error_after(6, "overloaded", same_chunk=True))
    agent = make_agent(root, fake, protocol=protocol)
    events = run_turn(agent, "fix it")
    shown = "".join(e.text for e in of_type(events, "text_delta"))
    assert shown and text.startswith(shown)
    assert of_type(events, "error") and events[-1].reason == "error"
    kept = [m.text for m in agent.session.messages if m.role == "assistant"]
    assert len(kept) == 1 and kept[0].split("\n")[0] == shown


def test_the_fake_server_really_sends_text_and_error_in_one_chunk(fake):
    """The fault used above is one chunk: a parser fed it gets text deltas and the error."""
    import httpx

    fake.add(reply.text("abc").chunked(1).error_after(4, same_chunk=True))
    route = fake.route("anthropic")
    with httpx.Client() as client:
        body = {"model": route.model, "max_tokens": 10, "stream": True, "messages": []}
        with client.stream("POST", fake.base_url + "/v1/messages", json=body) as response:
            chunks = list(response.iter_raw())
    events = [name for chunk in chunks[:1] for name, _ in SSEParser().feed(chunk)]
    assert "content_block_delta" in events and events[-1] == "error"
