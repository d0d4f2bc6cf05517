"""The fake provider server itself: script order, recording, redaction, key checks."""

from __future__ import annotations

import socket
import struct
import time

import httpx
import pytest

from liveforge.testing import FakeProvider, fault, reply


def _post(
    url: str, body: dict[str, object], headers: dict[str, str] | None = None
) -> httpx.Response:
    return httpx.post(url, json=body, headers=headers or {}, timeout=5)


def test_script_items_are_served_in_order_then_exhaustion_is_a_clear_400() -> None:
    """Each request takes the next item; past the end the server says the script ran out."""
    with FakeProvider([reply.text("one"), fault.server_error()]) as fake:
        url = fake.base_url + "/v1/messages"
        first = _post(url, {"model": "m", "messages": []})
        assert first.json()["content"] == [{"type": "text", "text": "one"}]
        assert _post(url, {"model": "m"}).status_code == 500
        exhausted = _post(url, {"model": "m"})
        assert exhausted.status_code == 400
        assert "script exhausted" in exhausted.json()["error"]["message"]
        assert fake.remaining == 0


def test_requests_are_recorded_with_keys_redacted() -> None:
    """Headers that carry keys read <redacted>; the body and key suffix are kept."""
    with FakeProvider([reply.text("a"), reply.text("b")]) as fake:
        _post(
            fake.base_url + "/v1/messages",
            {"model": "m", "stream": False},
            {"x-api-key": "sk-ant-abcd1234"},
        )
        _post(
            fake.openai_base_url + "/chat/completions",
            {"model": "g"},
            {"authorization": "Bearer sk-oa-wxyz9876"},
        )
    first, second = fake.requests
    assert (first.protocol, first.headers["x-api-key"], first.key_suffix) == (
        "anthropic",
        "<redacted>",
        "1234",
    )
    assert (second.protocol, second.headers["authorization"], second.key_suffix) == (
        "openai",
        "<redacted>",
        "9876",
    )
    assert second.body == {"model": "g"} and "sk-oa" not in repr(fake.requests)


def test_key_check_answers_401_without_using_the_script() -> None:
    """With keys= set, a wrong key gets the protocol's 401 body and the item stays queued."""
    with FakeProvider([reply.text("ok")], keys={"right"}) as fake:
        denied = _post(
            fake.openai_base_url + "/chat/completions",
            {"model": "m"},
            {"authorization": "Bearer wrong"},
        )
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "invalid_api_key"
        assert fake.remaining == 1


def test_streams_use_sse_headers_and_chunked_encoding() -> None:
    """A streamed reply is text/event-stream, chunked, with the protocol's request-id."""
    with FakeProvider([reply.text("hi"), reply.text("hi")]) as fake:
        anthropic = _post(fake.base_url + "/v1/messages", {"model": "m", "stream": True})
        openai = _post(fake.openai_base_url + "/chat/completions", {"model": "m", "stream": True})
    for response in (anthropic, openai):
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["transfer-encoding"] == "chunked"
    assert anthropic.headers["request-id"].startswith("req_fake_")
    assert anthropic.text.startswith("event: message_start\n")
    assert anthropic.text.rstrip().endswith('data: {"type": "message_stop"}')
    assert openai.text.rstrip().endswith("data: [DONE]")


def test_unknown_path_is_404_and_base_url_requires_running_server() -> None:
    """Paths other than the two APIs are 404; an unstarted server has no URL."""
    fake = FakeProvider()
    with pytest.raises(RuntimeError, match="not running"):
        _ = fake.base_url
    with fake:
        assert _post(fake.base_url + "/v1/embeddings", {}).status_code == 404


def test_each_streamed_event_is_noted_when_it_leaves_and_leaves_at_once() -> None:
    """`written` holds every streamed event with the time its chunk was flushed, in order,
    its bytes adding up to what the client received, also on a kept-alive connection."""
    import itertools
    import time

    answer = reply.text("w000 w001 w002 w003 w004 w005 w006 w007 ").chunked(5).slow(0.002)
    with FakeProvider([answer, answer]) as fake, httpx.Client(timeout=5) as client:
        body = {"model": "m", "stream": True, "messages": []}
        for _ in range(2):  # the second stream reuses the connection
            arrived: list[tuple[int, float]] = []  # bytes received so far, and when
            with client.stream("POST", fake.base_url + "/v1/messages", json=body) as r:
                for piece in r.iter_raw():
                    arrived.append(((arrived[-1][0] if arrived else 0) + len(piece), time.time()))
    written = fake.requests[1].written
    assert sum(len(raw) for _at, raw in written) == arrived[-1][0]
    assert sum(b'"text_delta"' in raw for _at, raw in written) == 8
    times = [at for at, _raw in written]
    assert times == sorted(times)
    # Each event reached the client after it was written, in the order written (how soon is
    # the latency bench's to measure, not a threshold here).
    ends = itertools.accumulate(len(raw) for _at, raw in written)
    lags = [next(t for n, t in arrived if n >= end) - at for end, (at, _r) in zip(ends, written)]
    assert all(lag >= 0 for lag in lags), [round(lag, 4) for lag in lags]


def test_a_request_cut_mid_body_is_kept_apart_and_takes_no_script_item() -> None:
    """A client that closes its connection partway through the body (cancelled, or its
    process died) sent no request: it is listed in `cut`, not `requests`, and the next
    whole request gets the first script item."""
    with FakeProvider([reply.text("first")]) as fake:
        host, port = fake.base_url.split("//")[1].split(":")
        with socket.create_connection((host, int(port.split("/")[0]))) as sock:
            sock.sendall(
                b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b'content-length: 400\r\n\r\n{"model": "m", "mess'
            )
        deadline = time.monotonic() + 10
        while not fake.cut and time.monotonic() < deadline:
            time.sleep(0.01)
        whole = _post(fake.base_url + "/v1/messages", {"model": "m", "messages": []})
        assert whole.json()["content"] == [{"type": "text", "text": "first"}]
        fake.wait_for_requests(1)
    assert [(c.protocol, c.received, c.declared) for c in fake.cut] == [("anthropic", 20, 400)]
    assert [r.body["model"] for r in fake.requests] == ["m"]


def test_a_client_that_resets_its_connection_prints_no_server_traceback(capfd) -> None:
    """A client reset (its process killed) while the server waits for its next request is
    the client's going away, not a server fault: no traceback on standard error."""
    with FakeProvider([reply.text("one")]) as fake:
        host, port = fake.base_url.split("//")[1].split(":")
        sock = socket.create_connection((host, int(port.split("/")[0])))
        body = b'{"model": "m", "messages": []}'
        sock.sendall(
            b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        assert b"200" in sock.recv(65536).split(b"\r\n")[0]
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, as from a killed process, while the server reads the next line
        time.sleep(1)  # the server's thread reads the reset
        err = capfd.readouterr().err
    assert "Exception occurred" not in err
