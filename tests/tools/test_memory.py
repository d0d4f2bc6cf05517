"""Memory: written through the tools, found again by a new store over the same file (a new
session), ranked by bm25 on a small labelled set (top-3 hit rate reported), hybrid with a
real loopback embeddings server, and offered in the system prompt within a token budget."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import liveforge.impls  # noqa: F401  (the @impl bodies)
from liveforge.declarations.memory import EmbeddingError, Memory, MemoryNotFound
from liveforge.declarations.permissions import Policy
from liveforge.declarations.prompt import SystemPrompt
from liveforge.declarations.tool_settings import EmbeddingSettings, MemorySettings, ToolSettings
from liveforge.declarations.toolbox import Toolbox
from liveforge.impls.memory import fts_query
from liveforge.kernel import Runtime

FULL_AUTO = Policy(mode="full-auto")  # these tests are about the tools, not the gate

NOTES = [
    "Run the test suite with `python -m pytest -n 2`; the full run takes about two minutes.",
    "The user prefers math.pi over literal approximations of pi.",
    "CI installs with `pip install -e .[dev]` inside a fresh virtualenv.",
    "Database migrations live in migrations/ and are applied with `alembic upgrade head`.",
    "Never commit directly to main; open a pull request from a feature branch.",
    "Prices are stored in integer cents, never as floats.",
    "The staging server is deployed by pushing a tag named staging-*.",
    "Logging uses structlog with JSON output in production.",
    "The API rate limit is 100 requests per minute per key.",
    "Docs are built with mkdocs; `mkdocs serve` previews them locally.",
    "Timezones: store UTC in the database and convert only for display.",
    "Feature flags are read from flags.yaml at startup; changes need a restart.",
    "The cache is Redis; keys expire after one hour.",
    "Coupons are parsed by parse_coupon in pricing/coupons.py.",
    "The user wants short commit messages in the imperative mood.",
    "Benchmarks go in bench/ and print tables with ratios measured side by side.",
    "Secrets come from environment variables, never from files in the repository.",
    "Type checking runs with mypy in strict mode on the kernel package.",
    "The bulk discount starts at ten units per line.",
    "Email is sent through the outbox table and a background worker.",
]

LABELLED = [  # (query, index of the memory that answers it)
    ("how do I run the tests", 0),
    ("which pi value should the code use", 1),
    ("how does CI install the package", 2),
    ("apply database migrations", 3),
    ("can I push straight to main", 4),
    ("how are prices stored, floats?", 5),
    ("deploy to staging", 6),
    ("logging format in production", 7),
    ("rate limit of the API", 8),
    ("preview the docs locally", 9),
    ("which timezone goes in the database", 10),
    ("where do feature flags come from", 11),
    ("how long do cache keys live", 12),
    ("where is coupon parsing", 13),
    ("commit message style", 14),
    ("where do benchmarks go", 15),
    ("where do secrets come from", 16),
    ("mypy strictness", 17),
    ("when does the bulk discount apply", 18),
    ("how is email sent", 19),
]


@pytest.fixture
def store(tmp_path):
    return Memory(path=tmp_path / ".liveforge" / "memory.sqlite", settings=MemorySettings())


def test_top3_hit_rate_on_a_labelled_set(store, capsys):
    """Each question finds the memory that answers it among the first three results."""
    ids = [store.write(text).id for text in NOTES]
    hits = [ids[answer] in [m.id for m in store.search(q, limit=3)] for q, answer in LABELLED]
    rate = sum(hits) / len(hits)
    with capsys.disabled():
        print(f"\nmemory search (FTS5 bm25): top-3 hit rate {rate:.0%} on {len(hits)} queries")
    assert rate >= 0.9, [q for (q, _), hit in zip(LABELLED, hits, strict=True) if not hit]


def test_written_in_one_session_found_in_the_next(project, tmp_path):
    """memory_write in one toolbox (runtime), memory_search in a fresh one over the project."""
    first = Runtime(project_root=project.root)
    box = Toolbox(policy=FULL_AUTO, runtime=first, packages=["liveforge.tools"], limit=8000)
    written = box.call("memory_write", {"text": "Deploys need the VPN.", "tags": ["ops"]})
    assert written.text == "remembered #1 [ops] Deploys need the VPN."
    first.close()
    second = Runtime(project_root=project.root)
    box = Toolbox(policy=FULL_AUTO, runtime=second, packages=["liveforge.tools"], limit=8000)
    assert box.call("memory_search", {"query": "how do deploys work"}).text == (
        "#1 [ops] Deploys need the VPN."
    )
    assert box.call("memory_forget", {"memory_id": 1}).text.startswith("forgot #1")
    assert box.call("memory_search", {"query": "deploys"}).text == "no memories match"
    gone = box.call("memory_forget", {"memory_id": 1})
    assert gone.is_error and "no memory #1" in gone.text
    second.close()


def test_edit_keeps_the_index_in_step_and_hostile_queries_are_plain_words(store):
    """An edited memory is found by its new words only; FTS syntax in a query is just text."""
    item = store.write("alpha beta", tags=["x"])
    store.edit(item.id, "gamma delta")
    assert store.search("alpha") == []
    assert [m.id for m in store.search("gamma")] == [item.id]
    assert store.get(item.id).tags == ["x"]
    for query in ['"unbalanced', "NEAR(a b)", "a* OR -b", "col:val", "'; DROP TABLE memories"]:
        store.search(query)  # no sqlite3.OperationalError
    assert fts_query('say "hi" OR bye') == '"say" OR "hi" OR "or" OR "bye"'
    again = store.write("gamma delta", tags=["y"])
    assert (again.id, again.tags, len(store.items())) == (item.id, ["x", "y"], 1)
    with pytest.raises(MemoryNotFound):
        store.forget(99)
    with pytest.raises(ValueError, match="needs text"):
        store.write("   ")


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /embeddings endpoint: one axis per topic, a topic's synonyms on
    the same axis."""

    TOPICS = (("deploy", "ship", "release"), ("test", "check"), ("price", "cost"))

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        vectors = [[_on(topic, text) + 0.01 for topic in self.TOPICS] for text in body["input"]]
        if self.path == "/api/embed":  # Ollama's own endpoint
            answer: dict[str, object] = {"embeddings": vectors}
        elif self.path == "/v1/embeddings":
            answer = {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}
        else:
            self.send_error(404)
            return
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def _on(topic: tuple[str, ...], text: str) -> float:
    return float(any(word in text.lower() for word in topic))


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_hybrid_search_finds_by_meaning_what_words_miss(tmp_path, protocol):
    """With embeddings, a query sharing no word with a memory still finds it by vector."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}" + ("/v1" if protocol == "openai" else "")
        embeddings = EmbeddingSettings(protocol=protocol, base_url=url, model="fake")
        settings = MemorySettings(embeddings=embeddings)
        store = Memory(path=tmp_path / "m.sqlite", settings=settings)
        store.write("The deploy script needs the VPN.")
        store.write("Prices are integer cents.")
        assert store.search("how do we ship a release") != []  # no word shared, same topic
        found = store.search("how do we ship a release", limit=1)
        assert [m.text for m in found] == ["The deploy script needs the VPN."]
        plain = Memory(path=tmp_path / "m.sqlite", settings=MemorySettings())
        assert plain.search("how do we ship a release") == []  # words alone miss it
        wrong = EmbeddingSettings(protocol=protocol, base_url=url + "/nowhere", model="fake")
        broken = Memory(path=tmp_path / "m.sqlite", settings=MemorySettings(embeddings=wrong))
        with pytest.raises(EmbeddingError, match=r"embedding request to .* failed"):
            broken.write("not kept")
        assert "not kept" not in [m.text for m in plain.items()]
    finally:
        server.shutdown()


def test_relevant_memories_join_the_system_prompt_within_the_budget(project):
    """The memories matching the turn come first, and the budget bounds how many."""
    rt = Runtime(project_root=project.root)
    settings = ToolSettings(memory=MemorySettings(prompt_budget=30))
    box = Toolbox(
        policy=FULL_AUTO, runtime=rt, packages=["liveforge.tools"], limit=8000, settings=settings
    )
    for text in NOTES:
        box.call("memory_write", {"text": text})
    prompt = SystemPrompt(runtime=rt, toolbox=box)
    prompt.focus("how are prices stored")
    part = {p.name: p for p in prompt.parts()}["memories"]
    assert part.text.splitlines()[0] == "#6 Prices are stored in integer cents, never as floats."
    assert len(part.text) <= 30 * 4 + 10
    box.settings = ToolSettings(deny=["group:memory"])
    assert "memories" not in {p.name for p in prompt.parts()}
    rt.close()
