"""The replay model of `liveforge demo`: the model's side of one episode, scripted.

The FakeProvider plays these replies in order, one per model request, so the real agent
loop, toolbox, runtime and sandbox do all the work: the replay only decides which tools to
call. The episode: look at the package, run its tests, read the failing method, patch it in
memory, verify the patched behaviour in the sandbox, run the tests again, persist.
"""

from __future__ import annotations

from liveforge.testing import Reply, reply

__all__ = ["FIXED_SUBTOTAL", "REPLAY_MODEL", "TARGET", "replay_script"]

REPLAY_MODEL = "replay-demo"
"""The model name the replay reports (the demo's route is "replay:replay-demo")."""

TARGET = "pricing.cart.Line.subtotal"
"""The method with the bug."""

FIXED_SUBTOTAL = '''def subtotal(self) -> int:
    """The line's price in cents, with the bulk discount from BULK_QUANTITY units."""
    cents = self.unit_cents * self.quantity
    if self.quantity >= BULK_QUANTITY:
        cents -= round(cents * BULK_DISCOUNT)
    return cents
'''

CHECK = """from pricing import Cart, Line
assert Line("pen", 100, 9).subtotal() == 900      # below the threshold: full price
assert Line("pen", 100, 10).subtotal() == 900     # exactly BULK_QUANTITY: discounted
assert Line("pen", 100, 20).subtotal() == 1800
[Line("pen", 100, n).subtotal() for n in (9, 10, 11)]
"""


def _step(text: str) -> Reply:
    return reply.text(text).chunked(6).slow(0.004)


def replay_script() -> list[Reply]:
    """The replies, in the order the agent will request them."""
    return [
        _step("Let me look at the project first.\n\n").tool_call(
            "inspect_module", {"path": "pricing", "depth": 2}
        ),
        _step(
            "A small pricing package with tests. I'll run them to see where it stands.\n\n"
        ).tool_call("run_tests", {"args": ["-q"]}),
        _step(
            "Two tests fail, both about the bulk discount at exactly ten units. "
            "Here is the method that applies it:\n\n"
        ).tool_call("view_source", {"path": TARGET}),
        _step(
            "The docstring says the discount starts *at* `BULK_QUANTITY` units, but the "
            "code tests `quantity > BULK_QUANTITY`, so a line of exactly ten units pays "
            "full price. I'll patch the method in memory with `>=`:\n\n"
        ).tool_call("patch", {"path": TARGET, "source": FIXED_SUBTOTAL}),
        _step(
            "Patched in memory only; the file is untouched. Now a sandboxed check of "
            "the boundary:\n\n"
        ).tool_call("verify", {"code": CHECK}),
        _step(
            "The boundary behaves. Running the whole test suite against the patched program:\n\n"
        ).tool_call("run_tests", {"args": ["-q"]}),
        _step(
            "All tests pass with the change, so it is safe to write it to the file.\n\n"
        ).tool_call("persist", {}),
        _step(
            "Done. **The bug:** `Line.subtotal` used `>` where the documented rule needs "
            "`>=`, so ten-unit lines missed the bulk discount.\n\n**The fix** was patched "
            "into the running program, verified in the sandbox, checked by the full test "
            "suite, and only then persisted to `pricing/cart.py`.\n"
        ),
    ]
