"""A run's result says what did not happen: refused and failed tool calls, stored and sent."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from browser_support import CHROMIUM, Browser
from gateway_support import FIX, Client, GatewayProcess, ended, gateway_env

from liveforge.gateway.store import GatewayStore
from liveforge.testing import FakeProvider, reply

#: The `runs` table as gateways wrote it before runs kept their refused and failed calls.
OLD_SCHEMA = """
CREATE TABLE sessions (
    name TEXT PRIMARY KEY,
    created REAL NOT NULL,
    agent_session TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT ''
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL REFERENCES sessions(name),
    idem TEXT NOT NULL DEFAULT '',
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    reason TEXT NOT NULL DEFAULT '',
    answer TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT ''
);
INSERT INTO sessions(name, created, title) VALUES ('old', 1.0, 'before');
INSERT INTO runs(id, session, input, status, created, started, ended, reason, answer)
VALUES ('r-old', 'old', 'hello', 'done', 1.0, 1.0, 2.0, 'answer', 'hi');
"""


def _old_database(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.commit()
    db.close()


def _columns(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    finally:
        db.close()


def test_refused_and_failed_calls_are_in_the_stored_run_and_its_final_status(
    sample: Path, fake: FakeProvider
):
    """In `ask` mode a patch whose question nobody answers (refused by approval), a shell
    call a deny rule refuses (by the policy) and a read that fails: the final `run_status`
    lists the two refused calls with tool, call_id, by and reason and the failed one under
    `tool_errors`; `runs.list` (the store) says the same, on a database written before
    these columns, which the gateway migrated; the file was not changed."""
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        + '\n[tool.liveforge.permissions]\ndeny = ["exec"]\n'
        + "\n[tool.liveforge.gateway]\napproval_timeout = 0.5\n"
    )
    database = sample / ".liveforge" / "gateway.db"
    _old_database(database)
    before = (sample / "pricing" / "cart.py").read_text()
    fake.add(
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX})
        .tool_call("exec", {"command": "echo hi"})
        .tool_call("view_source", {"path": "pricing.no_such_module"}),
        reply.text("I could not change it."),
    )
    gateway = GatewayProcess(sample, gateway_env(fake), mode="ask")
    try:
        client = Client(gateway.ws_url)
        run = client.request("run", session="main", input="fix it")["result"]["run"]
        messages = client.until(ended(run))
        final = messages[-1]
        calls = {
            e["event"]["name"]: e["event"]["call_id"]
            for e in messages
            if e["type"] == "event" and e["event"]["type"] == "tool_started"
        }
        assert any(m["type"] == "approval" for m in messages)  # asked; nobody answered
        assert final["status"] == "done" and final["reason"] == "answer"
        refused = [(r["tool"], r["call_id"], r["by"]) for r in final["refused"]]
        assert refused == [
            ("patch", calls["patch"], "approval"),
            ("exec", calls["exec"], "policy"),
        ]
        assert all(r["reason"] for r in final["refused"])
        assert "deny" in final["refused"][1]["reason"]
        [failed] = final["tool_errors"]
        assert (failed["tool"], failed["call_id"], failed["by"]) == (
            "view_source",
            calls["view_source"],
            None,
        )
        runs = {r["run"]: r for r in client.request("runs.list")["result"]["runs"]}
        assert runs[run]["refused"] == final["refused"]
        assert runs[run]["tool_errors"] == final["tool_errors"]
        assert runs["r-old"]["refused"] == [] and runs["r-old"]["answer"] == "hi"
        client.close()
    finally:
        gateway.stop()
    assert (sample / "pricing" / "cart.py").read_text() == before
    assert {"refused", "tool_errors"} <= _columns(database)


def test_an_old_database_opens_and_gains_the_new_columns(tmp_path: Path):
    """A `runs` table without `refused` and `tool_errors` gets them when the store opens
    it; its old runs read with empty lists, and a run ended now keeps its calls."""
    path = tmp_path / ".liveforge" / "gateway.db"
    _old_database(path)
    assert "refused" not in _columns(path)
    store = GatewayStore(path)
    try:
        old = store.run("r-old")
        assert old is not None and old.public()["refused"] == []
        assert old.tool_errors == [] and old.answer == "hi"
        run, _ = store.add_run("old", "again", "")
        refused = [{"tool": "patch", "call_id": "c1", "by": "approval", "reason": "no"}]
        store.finish(run.id, "done", reason="answer", refused=refused)
        again = store.run(run.id)
        assert again is not None and again.refused == refused and again.tool_errors == []
    finally:
        store.close()
    assert {"refused", "tool_errors"} <= _columns(path)
    GatewayStore(path).close()  # opening a migrated database again changes nothing


@pytest.mark.one_python  # a whole browser: CI runs it on one Python version
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_web_ui_says_at_a_runs_end_which_calls_were_not_run(
    sample: Path, fake: FakeProvider, tmp_path: Path, shots: Path
):
    """A patch a deny rule refuses: when the run ends, the conversation shows one line for
    it, "not run: patch — refused by policy" (the reason on hover)."""
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.liveforge.permissions]\ndeny = ["patch"]\n'
    )
    fake.add(
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("The patch was refused."),
    )
    gateway = GatewayProcess(sample, gateway_env(fake), mode="ask")
    browser = Browser(tmp_path / "profile")
    try:
        browser.goto(gateway.url)
        browser.wait_for("document.body.dataset.ready === 'yes'")
        browser.evaluate(
            "document.getElementById('input').value = 'fix it';"
            "document.getElementById('send').click()"
        )
        browser.wait_for("document.getElementById('status').textContent.startsWith('done')")
        lines = browser.evaluate(
            "[...document.querySelectorAll('#log .refused')].map(e => [e.textContent, e.title])"
        )
        assert [text for text, _ in lines] == ["not run: patch — refused by policy"]
        assert "deny" in lines[0][1]
        browser.screenshot(shots / "web-refused.png")
    finally:
        browser.close()
        gateway.stop()


def test_a_telegram_chat_is_told_which_calls_were_not_run(sample: Path, fake: FakeProvider):
    """The answer in a Telegram chat ends with one line per refused call."""
    from fake_telegram import TOKEN, FakeTelegram

    telegram = FakeTelegram()
    user = 4242
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        + '\n[tool.liveforge.permissions]\ndeny = ["patch"]\n'
        + f"\n[tool.liveforge.gateway.telegram]\nallowed_users = [{user}]\n"
        + f'api_base = "{telegram.base}"\npoll_timeout = 1\n'
    )
    fake.add(
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("The patch was refused."),
    )
    gateway = GatewayProcess(sample, gateway_env(fake, TELEGRAM_BOT_TOKEN=TOKEN), mode="ask")
    try:
        telegram.say("fix it", user=user)
        telegram.wait_for(lambda calls: "not run:" in "\n".join(telegram.chat_texts(user)))
        assert telegram.chat_texts(user)[-1] == (
            "The patch was refused.\n\nnot run: patch — refused by policy"
        )
    finally:
        gateway.stop()
        telegram.close()
