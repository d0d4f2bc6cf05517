"""The web UI in a real headless Chromium: a scripted task end to end, with screenshots."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser_support import CHROMIUM, Browser
from gateway_support import FIX, GatewayProcess, gateway_env

from liveforge.testing import FakeProvider, reply

CHECK = "from pricing import Line\nassert Line('pen', 100, 10).subtotal() == 900"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"
)


def test_the_ui_runs_a_task_with_a_diff_a_check_and_an_approval(sample: Path, tmp_path: Path):
    """The gateway's two projects are listed; send a task to the first, see the patch as a
    diff marked verified, approve the write, get the answer; the other project is untouched."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("verify", {"code": CHECK}),
        reply.tool_call("persist", {}),
        reply.text("Fixed: **ten units** now get the bulk discount."),
    ]
    shots = Path(os.environ.get("LIVEFORGE_SCREENSHOTS", tmp_path))
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
            browser.evaluate(
                "document.getElementById('input').value = 'fix the bulk discount';"
                "document.getElementById('send').click()"
            )
            question = browser.wait_for(
                "!document.getElementById('approval').hidden"
                " && document.getElementById('question').textContent"
            )
            assert "Allow persist" in question and "pricing/cart.py" in question
            browser.screenshot(shots / "gateway-approval.png")
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
            browser.screenshot(shots / "gateway-answer.png")
        finally:
            browser.close()
            gateway.stop()
    assert "quantity >= BULK" in (sample / "pricing" / "cart.py").read_text()
    assert "quantity >= BULK" not in (other / "pricing" / "cart.py").read_text()
