"""FakeProvider: a real HTTP server on 127.0.0.1 speaking both model APIs from a script.

It runs the standard library's ThreadingHTTPServer in a background thread (no extra
dependency, works from sync and async tests alike, and a thread per connection lets a
slow or hanging scripted response coexist with other requests). Responses are HTTP/1.1;
streams use chunked transfer encoding, so connections are kept alive like real APIs and a
scripted disconnect is a truncated chunked body, exactly what a cut stream looks like.

Endpoints: `POST /v1/messages` (Anthropic), `POST /v1/chat/completions` or
`POST /chat/completions` (OpenAI-compatible) and `POST /v1beta/models/M:generateContent` or
`…:streamGenerateContent?alt=sse` (Gemini). Each request takes the next script item;
when the script is exhausted the server answers 400 saying so. Every request is recorded
(`fake.requests`) with its JSON body and headers, API keys redacted.

Example::

    from liveforge.testing import FakeProvider, fault, reply

    with FakeProvider(script=[fault.overloaded(retry_after=0.01),
                              reply.text("hi").tool_call("view_source", {"path": "x"})]) as fake:
        route = fake.route("anthropic")              # Route for liveforge's Provider
        ...                                          # or an SDK: base_url=fake.base_url
        assert fake.requests[-1].body["model"] == "test-model"
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import SecretStr

from liveforge.declarations.provider import Credential, Route
from liveforge.testing import anthropic_format, gemini_format, openai_format
from liveforge.testing.http import (
    CutRequest,
    LoopbackServer,
    ProtocolName,
    RecordedRequest,
    RequestHandler,
)
from liveforge.testing.script import Fault, Reply

__all__ = ["FakeProvider", "RecordedRequest"]


class FakeProvider:
    """A scripted model server; use as a context manager (or call start/stop).

    script   Reply / Fault items, one per request, in order (extend with `add`).
    dialect  OpenAI-compatible server habits: "openai", "ollama", "vllm", "lmstudio".
    keys     if given, requests whose key is not among them get 401 (no script item used).
    model    model name reported when the request names none.
    context_limit  a hard context window: a request of more tokens (its size in bytes / 4,
             the count its usage reports) gets the provider's "prompt is too long" error
             stating both numbers, and no script item is used.
    answer   a function of the request body answering before the script (None: the script
             answers), e.g. summarisation requests told apart by their system prompt.
    """

    def __init__(
        self,
        script: Iterable[Reply | Fault] = (),
        *,
        dialect: str = "openai",
        keys: Iterable[str] | None = None,
        model: str = "test-model",
        context_limit: int | None = None,
        answer: Callable[[dict[str, Any]], Reply | Fault | None] | None = None,
    ) -> None:
        self.script: list[Reply | Fault] = list(script)
        self.context_limit = context_limit
        self.answer = answer
        self.by_model: dict[str, list[Reply | Fault]] = {}
        self.dialect = dialect
        self.keys = set(keys) if keys is not None else None
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.cut: list[CutRequest] = []
        """Requests whose body ended early (their client went away mid-write): not in
        `requests`, and no script item spent on them."""
        self._served = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._server: LoopbackServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeProvider:
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        self._server = LoopbackServer(("127.0.0.1", 0), RequestHandler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
            name="liveforge-fake-provider",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`: the Anthropic base URL (the SDK appends /v1/messages)."""
        if self._server is None:
            raise RuntimeError("FakeProvider is not running; use it in a `with` block.")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`: the OpenAI-compatible base URL."""
        return self.base_url + "/v1"

    def route(
        self,
        protocol: ProtocolName = "anthropic",
        *,
        model: str | None = None,
        keys: Iterable[str] = ("test-key",),
        name: str | None = None,
    ) -> Route:
        """A liveforge Route to this server (keys become credentials key1, key2, ...)."""
        model = model or self.model
        url = self.openai_base_url if protocol == "openai" else self.base_url
        creds = [Credential(name=f"key{i}", key=SecretStr(k)) for i, k in enumerate(keys, 1)]
        return Route(
            name=name or f"{protocol}:{model}",
            protocol=protocol,
            model=model,
            base_url=url,
            credentials=creds,
        )

    # -- script ----------------------------------------------------------------------------

    def add(self, *items: Reply | Fault, model: str | None = None) -> None:
        """Append items to the script; with `model`, to a script only requests naming that
        model take from (so concurrent callers on different models each get their own)."""
        with self._lock:
            (self.by_model.setdefault(model, []) if model else self.script).extend(items)

    @property
    def remaining(self) -> int:
        """Script items not yet served."""
        return len(self.script) - self._served

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self._arrived.notify_all()

    def cut_short(self, request: CutRequest) -> None:
        with self._lock:
            self.cut.append(request)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> None:
        """Block until `count` requests arrived in all (TimeoutError after `timeout` s).

        A call cancelled before its request reached the server takes no script item, so the
        item goes to the next request: a test that cancels "mid-request" waits here first.
        """
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(
                    f"the fake provider received {len(self.requests)} of {count} requests "
                    f"within {timeout} s"
                )

    def _next(self, model: str) -> Reply | Fault | None:
        with self._lock:
            if self.by_model.get(model):
                return self.by_model[model].pop(0)
            if self._served >= len(self.script):
                return None
            item = self.script[self._served]
            self._served += 1
            return item

    # -- responding ------------------------------------------------------------------------

    def respond(
        self,
        handler: RequestHandler,
        protocol: ProtocolName,
        body: dict[str, Any],
        size: int,
        key: str | None,
        record: RecordedRequest,
    ) -> None:
        """Answer one request from the script; note the outcome on `record`."""
        request_id = f"req_fake_{next(self._ids):06d}"
        record.outcome = "complete"
        if self.keys is not None and key not in self.keys:
            record.outcome = "fault"
            self._error(handler, protocol, Fault("auth"), request_id)
            return
        model = str(body.get("model") or _path_model(record.path) or self.model)
        tokens = max(1, size // 4)
        if self.context_limit is not None and tokens > self.context_limit:
            record.outcome = "fault"
            message = _OVERFLOW[protocol].format(tokens=tokens, limit=self.context_limit)
            self._error(handler, protocol, Fault("context_overflow", message=message), request_id)
            return
        item = self.answer(body) if self.answer is not None else None
        item = item if item is not None else self._next(model)
        if item is None:
            item = Fault(
                "bad_request",
                message=f"fake provider script exhausted after "
                f"{self._served} responses; add more items",
            )
        if isinstance(item, Fault):
            record.outcome = "fault"
            self._error(handler, protocol, item, request_id)
            return
        msg_id = f"{_ID_PREFIX[protocol]}_fake{next(self._ids):06d}"
        if not record.stream:
            self._whole(handler, protocol, item, model, size, msg_id, request_id)
            return
        if protocol == "anthropic":
            events = anthropic_format.stream_events(item, model, size, msg_id)
        elif protocol == "gemini":
            events = gemini_format.stream_events(item, model, size, msg_id)
        else:
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = openai_format.chunk_stream(item, model, size, self.dialect, msg_id, usage)
        if not self._stream(handler, protocol, item, events, request_id, record.written):
            record.outcome = "client disconnected"

    @staticmethod
    def _id_header(protocol: str, request_id: str) -> dict[str, str]:
        return {"request-id" if protocol == "anthropic" else "x-request-id": request_id}

    def _whole(
        self,
        handler: RequestHandler,
        protocol: str,
        item: Reply,
        model: str,
        size: int,
        msg_id: str,
        request_id: str,
    ) -> None:
        if protocol == "anthropic":
            data = anthropic_format.message_body(item, model, size, msg_id)
        elif protocol == "gemini":
            data = gemini_format.response_body(item, model, size, msg_id)
        else:
            data = openai_format.completion_body(item, model, size, self.dialect, msg_id)
        handler._send(200, json.dumps(data).encode(), self._id_header(protocol, request_id))

    def _error(self, handler: RequestHandler, protocol: str, item: Fault, request_id: str) -> None:
        if item.hang:
            time.sleep(item.hang)
        if item.disconnect:
            handler._drop()
            return
        if protocol == "anthropic":
            status, data = anthropic_format.error_body(item, request_id)
        elif protocol == "gemini":
            status, data = gemini_format.error_body(item)
        else:
            status, data = openai_format.error_body(item, self.dialect)
        headers = self._id_header(protocol, request_id)
        if item.retry_after is not None and protocol != "gemini":
            headers["retry-after"] = f"{item.retry_after:g}"
        if item.retry_after_ms is not None and protocol != "gemini":
            headers["retry-after-ms"] = f"{item.retry_after_ms:g}"
        handler._send(status, data, headers)

    def _stream(
        self,
        handler: RequestHandler,
        protocol: str,
        item: Reply,
        events: list[bytes],
        request_id: str,
        written: list[tuple[float, bytes]],
    ) -> bool:
        """Send the events, noting each in `written`; False if the client closed the
        connection first."""
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream; charset=utf-8")
        handler.send_header("cache-control", "no-cache")
        handler.send_header("transfer-encoding", "chunked")
        for name, value in self._id_header(protocol, request_id).items():
            handler.send_header(name, value)
        handler.end_headers()
        stream_fault = item.fault
        started = time.monotonic()
        held = b""  # events that go out in one chunk with the fault (same_chunk)
        try:
            for count, event in enumerate(events):
                if stream_fault is not None and count == stream_fault.after_events:
                    self._inject(handler, protocol, stream_fault, request_id, held)
                    return True
                if item.delay:  # on a fixed schedule, so sleep overshoot does not add up
                    time.sleep(max(0.0, started + (count + 1) * item.delay - time.monotonic()))
                if stream_fault is not None and stream_fault.same_chunk:
                    held += event
                    continue
                at = time.time()  # before the write: the client cannot have it sooner
                _write_chunk(handler, event)
                written.append((at, event))
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True
            return False

    def _inject(
        self,
        handler: RequestHandler,
        protocol: str,
        stream_fault: Any,
        request_id: str,
        held: bytes,
    ) -> None:
        if held and stream_fault.kind != "error":
            _write_chunk(handler, held)
        if stream_fault.kind == "disconnect":
            handler._drop()
            return
        if stream_fault.kind == "truncate":
            event = b""
        elif stream_fault.kind == "malformed":
            event = (
                b"event: content_block_delta\ndata: {not json\n\n"
                if protocol == "anthropic"
                else b"data: {not json\n\n"
            )
        elif protocol == "gemini":
            event = gemini_format.error_event(stream_fault.error_kind, stream_fault.message)
        elif protocol == "anthropic":
            event = anthropic_format.error_event(
                stream_fault.error_kind, stream_fault.message, request_id
            )
        else:
            event = openai_format.error_chunk(
                stream_fault.error_kind, stream_fault.message, self.dialect
            )
        if stream_fault.kind == "error":
            event = held + event
        if event:
            _write_chunk(handler, event)
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()


_ID_PREFIX = {"anthropic": "msg", "openai": "chatcmpl", "gemini": "resp"}


_OVERFLOW = {
    "anthropic": "prompt is too long: {tokens} tokens > {limit} maximum",
    "openai": "This model's maximum context length is {limit} tokens. However, your messages "
    "resulted in {tokens} tokens. Please reduce the length of the messages.",
    "gemini": "The input token count ({tokens}) exceeds the maximum number of tokens allowed "
    "({limit}).",
}
"""Each API's own words for a request over the window, with the two counts."""


def _path_model(path: str) -> str | None:
    """The model named in a Gemini path (/v1beta/models/M:generateContent)."""
    name = path.split("?")[0].rpartition("/models/")[2]
    return name.partition(":")[0] or None


def _write_chunk(handler: RequestHandler, data: bytes) -> None:
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    handler.wfile.flush()
