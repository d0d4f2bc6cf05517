"""The web UI in a real headless Chromium: a scripted task end to end, with screenshots."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser_support import CHROMIUM, Browser
from gateway_support import FIX, GatewayProcess, gateway_env

from liveforge.testing import FakeProvider, reply

CHECK = "from pricing import Line\nassert Line('pen', 100, 10).subtotal() == 900"

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"
    ),
    pytest.mark.one_python,  # a whole browser: CI runs it on one Python version
]


APPLY = """def apply(self, total_cents: int) -> int:
    return max(total_cents - total_cents * self.percent // 100 - self.cents, 0)
"""


def _snap(browser: Browser, path: Path) -> None:
    """A screenshot of the page, checked to be a PNG."""
    browser.screenshot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _send(browser: Browser, text: str) -> None:
    browser.evaluate(
        f"document.getElementById('input').value = {text!r};document.getElementById('send').click()"
    )


def _question(browser: Browser) -> str:
    """The approval question, once the prompt shows."""
    return str(
        browser.wait_for(
            "!document.getElementById('approval').hidden"
            " && document.getElementById('question').textContent"
        )
    )


def _sessions(browser: Browser) -> list[str]:
    return list(
        browser.evaluate(
            "[...document.querySelectorAll('#sessions li')]"
            ".map(e => e.textContent.split(' — ')[0] + (e.className ? '*' : ''))"
        )
    )


def test_the_ui_runs_a_task_with_a_diff_a_check_an_approval_a_denial_and_sessions(
    sample: Path, tmp_path: Path, shots: Path
):
    """The gateway's two projects are listed; send a task to the first, see the patch as a
    diff marked verified, approve the write, get the answer; open a second session from the
    session list, deny its write (the file stays as it was); the list shows both sessions
    and going back to the first shows its history; the other project is untouched."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("verify", {"code": CHECK}),
        reply.tool_call("persist", {}),
        reply.text("Fixed: **ten units** now get the bulk discount."),
        reply.tool_call("patch", {"path": "pricing.coupons.Coupon.apply", "source": APPLY}),
        reply.tool_call("persist", {"force": True}),
        reply.text("Not saved: *the write was denied*."),
    ]
    coupons = (sample / "pricing" / "coupons.py").read_text()
    with FakeProvider(script=script) as fake:
        other = tmp_path / "other"
        shutil.copytree(sample, other)
        gateway = GatewayProcess([str(sample), str(other)], gateway_env(fake), mode="auto-edit")
        browser = Browser(tmp_path / "profile")
        try:
            browser.goto(gateway.url)
            browser.wait_for("document.body.dataset.ready === 'yes'")
            listed = browser.evaluate(
                "[...document.querySelectorAll('#projects li')].map(e => e.textContent).join()"
            )
            assert listed == "shop,other"
            _send(browser, "fix the bulk discount")
            question = _question(browser)
            assert "Allow persist" in question and "pricing/cart.py" in question
            _snap(browser, shots / "gateway-approval.png")
            browser.evaluate("document.getElementById('approve').click()")
            answer = browser.wait_for(
                "[...document.querySelectorAll('.assistant strong')].map(e => e.textContent).join()"
            )
            assert answer == "ten units"
            badge = browser.evaluate("document.querySelector('.change .status').textContent")
            assert badge == "persisted"
            added = browser.evaluate("document.querySelector('.change .add') !== null")
            assert added
            browser.wait_for("document.querySelectorAll('#checks .check.ok').length > 0")
            _snap(browser, shots / "gateway-answer.png")

            browser.evaluate(
                "document.getElementById('session-name').value = 'coupons';"
                "document.getElementById('new-session').requestSubmit()"
            )
            browser.wait_for("document.getElementById('current').textContent === 'coupons'")
            _send(browser, "fix coupons, then save")
            assert "pricing/coupons.py" in _question(browser)
            _snap(browser, shots / "gateway-deny.png")
            browser.evaluate("document.getElementById('deny').click()")
            denied = browser.wait_for(
                "[...document.querySelectorAll('.assistant em')].map(e => e.textContent).join()"
            )
            assert denied == "the write was denied"
            assert browser.evaluate("document.getElementById('approval').hidden")
            refused = browser.evaluate(
                "[...document.querySelectorAll('.tool.error')].map(e => e.textContent).join()"
            )
            assert refused.startswith("← ")
            badge = browser.evaluate("document.querySelector('.change .status').textContent")
            assert badge == "in memory, not checked"
            browser.wait_for("document.getElementById('status').textContent.startsWith('done')")
            assert browser.wait_for("document.querySelectorAll('#sessions li').length === 2")
            assert sorted(_sessions(browser)) == ["coupons*", "main"]
            browser.evaluate(
                "[...document.querySelectorAll('#sessions li')]"
                ".find(e => e.textContent.startsWith('main')).click()"
            )
            browser.wait_for("document.getElementById('current').textContent === 'main'")
            history = browser.wait_for(
                "[...document.querySelectorAll('#log .msg')].map(e => e.textContent).join('|')"
            )
            assert "fix the bulk discount" in history and "ten units" in history
            assert "fix coupons" not in history
            assert "main*" in _sessions(browser)
            _snap(browser, shots / "gateway-sessions.png")
        finally:
            browser.close()
            gateway.stop()
    assert "quantity >= BULK" in (sample / "pricing" / "cart.py").read_text()
    assert (sample / "pricing" / "coupons.py").read_text() == coupons
    assert "quantity >= BULK" not in (other / "pricing" / "cart.py").read_text()
