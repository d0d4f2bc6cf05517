"""The terminal renderer, the cost line and dotted-path completion, on real objects."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console

from liveforge.cli.chat._input import ChatCompleter, dotted_candidates
from liveforge.cli.turns._cost import cost, describe_usage
from liveforge.cli.turns._render import Renderer, short_arguments
from liveforge.declarations import agent as ev
from liveforge.declarations.messages import Usage


def _renderer(model: str = "anthropic:claude-sonnet-4-5") -> tuple[Renderer, io.StringIO]:
    out = io.StringIO()
    return Renderer(Console(file=out, width=100, force_terminal=False), model=model), out


def test_a_turn_renders_text_tool_line_diff_and_usage():
    """Streamed text is printed whole, tools as one line, patches as diffs, then usage+cost."""
    renderer, out = _renderer()
    events = [
        ev.TurnStarted(session_id="s", turn=1, user_input="hi"),
        ev.TextDelta(text="Fixing "),
        ev.TextDelta(text="**it**."),
        ev.ToolStarted(
            call_id="1", name="patch", arguments={"path": "m.f", "source": "def f():\n    pass\n"}
        ),
        ev.ToolFinished(
            call_id="1", name="patch", is_error=False, summary="applied c1", duration=0.01, chars=10
        ),
        ev.PatchApplied(
            change_id="c1", target="m.f", kind="function", diff="--- a/m.py\n+++ b/m.py\n-x\n+y\n"
        ),
        ev.FinalAnswer(text="Fixing it."),
        ev.TurnEnded(
            reason="answer",
            steps=2,
            context_tokens=1200,
            usage=Usage(input_tokens=1000, output_tokens=100),
        ),
    ]
    for event in events:
        renderer.event(event)
    text = out.getvalue()
    assert "Fixing it." in text and text.count("Fixing it.") == 1
    assert "● patch(path='m.f', source=<3 lines>)" in text
    assert "patch c1 function m.f" in text and "+y" in text
    assert "1,000 in / 100 out" in text and "~$0.0045" in text


def test_an_unstreamed_final_answer_is_printed_once():
    """A final answer not streamed is printed; a cancelled turn says the session goes on."""
    renderer, out = _renderer()
    renderer.event(ev.FinalAnswer(text="Only at the end."))
    renderer.event(ev.Cancelled(open_calls=[]))
    assert out.getvalue().count("Only at the end.") == 1
    assert "turn cancelled; the session continues" in out.getvalue()


def test_cost_is_known_for_listed_models_and_absent_for_others():
    """Prices apply by model-name prefix; local or unknown models show tokens only."""
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost("anthropic:claude-sonnet-4-5", usage) == 18.0
    assert cost("openai:gpt-4o-mini", usage) == 0.75
    assert cost("ollama:llama3.1", usage) is None
    assert "$" not in describe_usage("ollama:llama3.1", usage, usage, 10)


def test_short_arguments_keep_one_line():
    """Long values are cut and multi-line values shown as a line count."""
    line = short_arguments({"code": "a\nb", "path": "x" * 200})
    assert "\n" not in line and "code=<2 lines>" in line and "…" in line


def test_dotted_completion_comes_from_live_modules(sample: Path):
    """pricing.ca completes to pricing.cart; pricing.cart.Li to the Line class."""
    sys.path.insert(0, str(sample))
    try:
        assert "pricing.cart" in dotted_candidates("pricing.ca", sample)
        assert dotted_candidates("pricing.cart.Li", sample) == ["pricing.cart.Line"]
        completer = ChatCompleter(["/help", "/history"], sample)
        found = [c.text for c in completer.get_completions(Document("/h"), CompleteEvent())]
        assert found == ["/help", "/history"]
    finally:
        sys.path.remove(str(sample))
        for name in [n for n in sys.modules if n == "pricing" or n.startswith("pricing.")]:
            del sys.modules[name]
