"""The Telegram channel against a fake Bot API, and scheduled runs."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fake_telegram import TOKEN, FakeTelegram
from gateway_support import Client, GatewayProcess, gateway_env

from liveforge.gateway.channels import Channels
from liveforge.gateway.core import Gateway
from liveforge.gateway.cron import Cron
from liveforge.gateway.schedule import Scheduler
from liveforge.gateway.settings import ScheduleEntry
from liveforge.gateway.telegram import split_message
from liveforge.testing import FakeProvider, reply

ALLOWED = 4242


def _configure(project: Path, text: str) -> None:
    with (project / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n" + text)


@pytest.fixture
def telegram():
    fake = FakeTelegram()
    yield fake
    fake.close()


def _final_text(telegram: FakeTelegram, chat: int) -> str:
    """What the chat shows: each message's last text, in order."""
    return "\n".join(telegram.chat_texts(chat))


GREETING = "Hello from the bot. " + " ".join(f"word{i}" for i in range(40))


def test_a_message_in_a_streamed_answer_out_and_long_answers_split(sample, telegram):
    """An allowed user's message runs on the chat's session; the answer streams into one
    message (the provider's chunks span several edit intervals, so the chat shows a shorter
    prefix first, then the whole); a long answer is split into messages of at most 4096
    characters; strangers are ignored."""
    long_answer = "\n".join(f"line {i} " + "x" * 60 for i in range(140))  # ~9,500 characters
    _configure(
        sample,
        "[tool.liveforge.gateway.telegram]\n"
        f'allowed_users = [{ALLOWED}]\napi_base = "{telegram.base}"\npoll_timeout = 1\n',
    )
    paced = reply.text(GREETING).chunked(8).slow(0.1)  # 40 chunks over 4 s: 1 edit a second
    with FakeProvider(script=[paced, reply.text(long_answer)]) as fake:
        gateway = GatewayProcess(sample, gateway_env(fake, TELEGRAM_BOT_TOKEN=TOKEN))
        try:
            telegram.say("who goes there?", user=999)
            telegram.say("hello", user=ALLOWED)
            telegram.wait_for(lambda calls: GREETING in _final_text(telegram, ALLOWED))
            [greeting] = [t for t in telegram.shown.values() if t[-1] == GREETING]
            assert all(GREETING.startswith(text) for text in greeting)
            assert [len(t) for t in greeting] == sorted({len(t) for t in greeting})
            assert len(greeting) >= 3, f"not streamed: the message showed only {greeting}"
            telegram.say("tell me everything", user=ALLOWED)
            telegram.wait_for(lambda calls: "line 139" in _final_text(telegram, ALLOWED))
            sent = [p["text"] for m, p in telegram.calls if m == "sendMessage"]
            assert all(len(text) <= 4096 for text in sent)
            assert len(sent) >= 4  # one for the greeting, at least three for the long answer
            assert not [p for m, p in telegram.calls if p.get("chat_id") == 999]
            assert len(fake.requests) == 2
            client = Client(gateway.ws_url)
            sessions = client.request("sessions.list")["result"]["sessions"]
            assert [s["session"] for s in sessions] == [f"telegram:{ALLOWED}"]
            client.close()
        finally:
            gateway.stop()


def test_split_message_cuts_at_line_breaks():
    """Pieces stay under the limit, cut after whole lines, and lose nothing but the breaks."""
    text = "\n".join("y" * 50 for _ in range(30))
    pieces = split_message(text, limit=200)
    assert all(len(p) <= 200 for p in pieces)
    assert "\n".join(pieces) == text
    assert split_message("short") == ["short"]


def test_cron_fields_ranges_steps_and_days():
    """Five-field cron: steps, ranges, lists; either day field matches when both are set."""
    cron = Cron("*/15 9-17 * * 1-5")
    assert cron.matches(datetime(2026, 11, 23, 9, 30))  # a Monday
    assert not cron.matches(datetime(2026, 11, 22, 9, 30))  # a Sunday
    assert not cron.matches(datetime(2026, 11, 23, 9, 31))
    either = Cron("0 0 1 * 0")
    assert either.matches(datetime(2026, 11, 1, 0, 0)) and either.matches(datetime(2026, 11, 22))
    with pytest.raises(ValueError, match="minute field '61'"):
        Cron("61 * * * *")
    with pytest.raises(ValueError, match="5 fields"):
        Cron("* * *")


def test_missed_scheduled_runs_after_a_restart_are_reported(sample):
    """Firings that fell while the gateway was down are listed, not dropped or run. The
    entry fires daily twelve hours from now (local time, as the scheduler reads it), so it
    cannot fire for real during the test; it was last checked four days ago."""
    later = datetime.now() + timedelta(hours=12)
    _configure(
        sample,
        '[[tool.liveforge.schedule]]\nname = "daily"\n'
        f'cron = "{later.minute} {later.hour} * * *"\n'
        'session = "ops"\ninput = "check the tests"\n',
    )
    db = sample / ".liveforge" / "gateway.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE schedules (name TEXT PRIMARY KEY, last REAL NOT NULL)")
        conn.execute("INSERT INTO schedules VALUES ('daily', ?)", (time.time() - 4 * 86400,))
    gateway = GatewayProcess(sample, gateway_env(None))
    try:
        client = Client(gateway.ws_url)
        [missed] = client.request("health")["result"]["missed_schedules"]
        assert missed["name"] == "daily" and missed["count"] >= 3
        assert client.request("runs.list")["result"]["runs"] == []
        client.close()
    finally:
        gateway.stop()


def test_a_due_schedule_starts_one_run_however_often_it_is_fired(sample, monkeypatch):
    """The same entry and minute give one run (idempotent), which runs to its answer."""
    entry = ScheduleEntry(name="nightly", cron="0 3 * * *", session="nightly", input="go")

    async def scenario(fake: FakeProvider) -> str:
        gateway = Gateway(sample)
        await gateway.start()
        try:
            scheduler = Scheduler(gateway, [entry], Channels())
            minute = datetime(2026, 11, 24, 3, 0)
            first = await scheduler.fire_due(minute)
            again = await scheduler.fire_due(minute)
            assert first == again and len(first) == 1
            assert await scheduler.fire_due(datetime(2026, 11, 24, 3, 1)) == []
            deadline = time.monotonic() + 120
            while gateway.store.run(first[0]).status != "done":  # type: ignore[union-attr]
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            return gateway.store.run(first[0]).answer  # type: ignore[union-attr]
        finally:
            await gateway.stop()

    with FakeProvider(script=[reply.text("nightly report")]) as fake:
        for name, value in gateway_env(fake).items():
            if name.startswith(("ANTHROPIC", "LIVEFORGE")):
                monkeypatch.setenv(name, value)
        assert asyncio.run(scenario(fake)) == "nightly report"


def test_two_projects_on_one_telegram_bot_are_refused(sample, tmp_path, monkeypatch):
    """The Bot API lets one poller in: a second project on the same bot is a config error
    naming both projects, before anything starts."""
    import shutil

    from liveforge.gateway.serving import _projects
    from liveforge.kernel.errors import ConfigError

    table = "\n[tool.liveforge.gateway.telegram]\nallowed_users = [1]\n"
    with (sample / "pyproject.toml").open("a") as handle:
        handle.write(table)
    other = tmp_path / "second"
    shutil.copytree(sample, other)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:abc")
    with pytest.raises(ConfigError, match="projects shop and second both use the Telegram bot"):
        _projects([("shop", sample), ("second", other)], "")
    assert not (sample / ".liveforge" / "gateway.db").exists()


def _model_env(monkeypatch: pytest.MonkeyPatch, fake: FakeProvider) -> None:
    """The fake provider as this process's model (the project worker inherits it)."""
    for name, value in gateway_env(fake).items():
        if name.startswith(("ANTHROPIC", "LIVEFORGE")):
            monkeypatch.setenv(name, value)


def test_a_schedule_delivers_its_answer_to_a_telegram_chat(sample, telegram, monkeypatch):
    """A schedule whose `deliver` names a Telegram chat: when it fires, its run's answer is
    sent to that chat through the project's Telegram channel (the fake Bot API gets it)."""
    from liveforge.gateway.serving import _projects

    _configure(
        sample,
        f'[tool.liveforge.gateway.telegram]\nallowed_users = [{ALLOWED}]\napi_base = "'
        f'{telegram.base}"\npoll_timeout = 1\n\n[[tool.liveforge.schedule]]\nname = "nightly"'
        f'\ncron = "0 3 * * *"\nsession = "nightly"\ninput = "report"\n'
        f'deliver = "telegram:{ALLOWED}"\n',
    )
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)

    async def scenario() -> None:
        hub, extras = _projects([("shop", sample)], "full-auto")
        await hub.start()
        for extra in extras:
            await extra.start()
        try:
            [scheduler] = [e for e in extras if isinstance(e, Scheduler)]
            [run] = await scheduler.fire_due(datetime(2026, 11, 24, 3, 0))
            done = lambda calls: "nightly: all green" in _final_text(telegram, ALLOWED)  # noqa: E731
            await asyncio.to_thread(telegram.wait_for, done)
            assert hub.projects["shop"].store.run(run).session == "nightly"  # type: ignore[union-attr]
        finally:
            for extra in extras:
                await extra.stop()
            await hub.stop()

    with FakeProvider(script=[reply.text("nightly: all green").chunked(6)]) as fake:
        _model_env(monkeypatch, fake)
        asyncio.run(scenario())
    assert _final_text(telegram, ALLOWED) == "nightly: all green"


@pytest.mark.parametrize(
    ("deliver", "says"),
    [("telegram:4242", "channels are ui"), ("slack:C01", "cannot deliver to 'slack:C01'")],
)
def test_a_schedule_delivering_to_a_channel_the_project_lacks_is_refused(sample, deliver, says):
    """A schedule's `deliver` must name one of the project's channels: refused at start-up
    with the schedule's name and the channels there are, not silently shown in the UI."""
    from liveforge.gateway.serving import _projects
    from liveforge.kernel.errors import ConfigError

    _configure(
        sample,
        f'[[tool.liveforge.schedule]]\nname = "nightly"\ncron = "0 3 * * *"\n'
        f'session = "nightly"\ninput = "report"\ndeliver = "{deliver}"\n',
    )
    with pytest.raises(ConfigError, match=f"schedule nightly: .*{says}") as caught:
        _projects([("shop", sample)], "")
    assert caught.value.key == "schedule.deliver"
