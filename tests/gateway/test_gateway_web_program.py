"""The web UI's live program panel and its details, in a real headless Chromium, with
screenshots (kept as artefacts when LIVEFORGE_SCREENSHOTS is set)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import CHROMIUM, Browser, press_alt_enter
from gateway_support import FIX, GatewayProcess, gateway_env

from liveforge.testing import FakeProvider, reply

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"
    ),
    pytest.mark.one_python,  # a whole browser: CI runs it on one Python version
]

APPLY = """def apply(self, total_cents: int) -> int:
    return max(total_cents - total_cents * self.percent // 100 - self.cents, 0)
"""
VALUE = "from pricing import Line\nLine('pen', 100, 10).subtotal()"
LONG_QUERY = "subtotal of a line with a bulk discount applied to every unit"


def _snap(browser: Browser, path: Path) -> None:
    browser.screenshot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _send(browser: Browser, text: str) -> None:
    browser.evaluate(
        f"document.getElementById('input').value = {text!r};document.getElementById('send').click()"
    )


def _text(browser: Browser, selector: str) -> str:
    return str(
        browser.evaluate(
            f"[...document.querySelectorAll({selector!r})].map(e => e.textContent).join('|')"
        )
    )


def _state(browser: Browser, change: str) -> str:
    """The state the panel shows for `change` ('' while it is not there)."""
    return str(
        browser.evaluate(
            f"(document.querySelector('#modules li[data-change={change}]') || "
            "{dataset: {state: ''}}).dataset.state"
        )
    )


def _wait_state(browser: Browser, change: str, state: str) -> None:
    browser.wait_for(
        f"(document.querySelector('#modules li[data-change={change}]') || "
        f"{{dataset: {{}}}}).dataset.state === {state!r}"
    )


def _ended(browser: Browser) -> None:
    browser.wait_for("/^(done|failed|aborted)/.test(document.getElementById('status').textContent)")


def test_the_live_program_panel_follows_the_changes_and_the_log_reads_well(
    sample: Path, tmp_path: Path, shots: Path
):
    """An empty session greets with the project and model, undo disabled. Then: a patch
    (applied), a check with a value (verified, its value shown once, no duplicate line), a
    second module's patch; the panel lists both modules with state, last check and diff
    against disk; undo of one change from the panel marks it rolled back there and on its
    card in the log; persist shows persisted; a check whose live run disagrees with the
    fresh import shows divergent; the header's undo rolls back the newest. Tool arguments
    read as name=value, cut with an ellipsis; text bubbles end without an empty line; the
    input hint and Alt-Enter agree with the terminal chat."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("verify", {"code": VALUE}),
        reply.tool_call("find", {"query": LONG_QUERY}),
        reply.tool_call("patch", {"path": "pricing.coupons.Coupon.apply", "source": APPLY}),
        reply.text("Two changes:\n\n- the **cart**, checked\n- the coupon, not yet\n"),
        reply.tool_call("persist", {}),
        reply.tool_call("patch", {"path": "pricing.coupons.Coupon.apply", "source": APPLY}),
        reply.tool_call("execute", {"code": "import pricing.cart as c\nc.BULK_QUANTITY = 3"}),
        reply.tool_call(
            "verify", {"code": "from pricing import cart\nassert cart.BULK_QUANTITY == 10"}
        ),
        reply.text("Saved the cart; the coupon check disagrees with the live program."),
    ]
    with FakeProvider(script=script) as fake:
        gateway = GatewayProcess(sample, gateway_env(fake), mode="full-auto")
        browser = Browser(tmp_path / "profile")
        try:
            browser.goto(gateway.url)
            browser.wait_for("document.body.dataset.ready === 'yes'")
            greeting = _text(browser, ".greeting")
            assert "session main of shop" in greeting and "anthropic:test-model" in greeting
            assert "model anthropic:test-model" in _text(browser, "#model")
            assert browser.evaluate("document.getElementById('undo').disabled")
            assert _text(browser, "#program-note").startswith("Nothing changed yet")
            hint = browser.evaluate("document.getElementById('input').placeholder")
            assert "Alt-Enter adds a line" in hint
            browser.evaluate("document.getElementById('input').focus()")
            browser.evaluate("document.getElementById('input').value = 'one'")
            press_alt_enter(browser)
            assert browser.evaluate("document.getElementById('input').value") == "one\n"
            assert _text(browser, ".msg") == ""  # Alt-Enter did not send
            _snap(browser, shots / "web-empty.png")

            _send(browser, "fix the cart and the coupon")
            _ended(browser)
            _wait_state(browser, "c2", "applied")
            _wait_state(browser, "c1", "verified")
            assert not browser.evaluate("document.getElementById('undo').disabled")
            calls = _text(browser, ".tool")
            assert "patch(path='pricing.cart.Line.subtotal', source=<6 lines>)" in calls
            assert "verify(code=<2 lines>)" in calls
            assert "find(query='subtotal of a line with a bulk discount applie…)" in calls
            assert '{"' not in calls and "\\n" not in calls
            log = _text(browser, "#log")
            assert log.count("snippet passed") == 1
            assert "value 900" in _text(browser, "#log .check")
            bubble = browser.evaluate(
                "[...document.querySelectorAll('.assistant')].pop().innerHTML"
            )
            assert bubble.startswith("<p>") and bubble.endswith("</ul>"), bubble
            assert not bubble.endswith("<br>")
            modules = _text(browser, "#modules .module h3 code")
            assert modules == "pricing.coupons|pricing.cart"
            cart = "#modules .module[data-module='pricing.cart']"
            assert "value 900" in _text(browser, f"{cart} .last")
            assert "verified (snippet)" in _text(browser, f"{cart} h3 .status")
            assert "quantity >= BULK_QUANTITY" in _text(browser, f"{cart} details pre")
            _snap(browser, shots / "web-program.png")

            browser.evaluate("document.querySelector('#modules button[data-change=c2]').click()")
            _wait_state(browser, "c2", "rolled_back")
            cards = browser.evaluate(
                "[...document.querySelectorAll('#log .change')]"
                ".map(e => e.querySelector('h3').textContent)"
            )
            assert any(c.startswith("c2 ") and c.endswith("rolled back") for c in cards), cards
            assert "↶ rolled back c2 pricing.coupons.Coupon.apply" in _text(browser, ".tool")
            assert _state(browser, "c1") == "verified"

            _send(browser, "save the cart, then redo the coupon and check it")
            _wait_state(browser, "c1", "persisted")
            _wait_state(browser, "c3", "divergent")
            _ended(browser)
            coupons = "#modules .module[data-module='pricing.coupons']"
            assert "divergent" in _text(browser, f"{coupons} h3 .status")
            assert "memory and file agree" in _text(browser, f"{cart}")
            _snap(browser, shots / "web-program-divergent.png")

            browser.evaluate("document.getElementById('undo').click()")
            _wait_state(browser, "c3", "rolled_back")
            assert browser.wait_for("document.getElementById('undo').disabled === false")
        finally:
            browser.close()
            gateway.stop()
    assert "quantity >= BULK" in (sample / "pricing" / "cart.py").read_text()


def test_a_page_reloaded_during_a_question_shows_it_and_can_stop_the_run(
    sample: Path, tmp_path: Path, shots: Path
):
    """Reload while persist waits for approval: the reloaded page shows the question and
    an enabled stop button; stop ends the run (aborted), the question goes away and the
    file stays as it was."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {"force": True}),
        reply.text("should not be reached"),
    ]
    cart = (sample / "pricing" / "cart.py").read_text()
    with FakeProvider(script=script) as fake:
        gateway = GatewayProcess(sample, gateway_env(fake), mode="auto-edit")
        browser = Browser(tmp_path / "profile")
        try:
            browser.goto(gateway.url)
            browser.wait_for("document.body.dataset.ready === 'yes'")
            _send(browser, "fix and save")
            browser.wait_for("!document.getElementById('approval').hidden")
            browser.reload()
            browser.wait_for("document.body.dataset.ready === 'yes'")
            question = browser.wait_for(
                "!document.getElementById('approval').hidden"
                " && document.getElementById('question').textContent"
            )
            assert "Allow persist" in question and "pricing/cart.py" in question
            assert browser.evaluate("document.querySelector('#question .add') !== null")
            assert not browser.evaluate("document.getElementById('abort').disabled")
            _snap(browser, shots / "web-reloaded-question.png")
            browser.evaluate("document.getElementById('abort').click()")
            browser.wait_for("document.getElementById('status').textContent.startsWith('aborted')")
            assert browser.evaluate("document.getElementById('approval').hidden")
            assert browser.evaluate("document.getElementById('abort').disabled")
        finally:
            browser.close()
            gateway.stop()
    assert (sample / "pricing" / "cart.py").read_text() == cart
