"""Every tool result is bounded, with a marker saying how to see the rest."""

from __future__ import annotations

from liveforge.tools._output import (
    DEFAULT_LIMIT,
    clip,
    clip_middle,
    limited_to,
    number_lines,
    output_limit,
    plain,
)


def test_short_text_is_unchanged():
    """Text under the limit comes back as it was."""
    assert clip("abc\n", limit=10) == "abc\n"


def test_clip_cuts_at_a_line_and_says_how_to_continue():
    """The marker counts what was left out and carries the caller's continuation hint."""
    text = "".join(f"line {i}\n" for i in range(1, 101))
    out = clip(text, limit=120, more=lambda line: f"view_source('m', start={line})")
    assert out.startswith("line 1\n") and len(out) <= 120
    assert out.splitlines()[-2] == "line 6"
    assert out.endswith("[... 94 more lines (750 chars) not shown; view_source('m', start=7)]")
    assert out.endswith("]")


def test_clip_without_hint_suggests_narrowing():
    """Without a continuation hint the marker still says what to do."""
    assert clip("x\n" * 100, limit=10).endswith("narrow the request to see the rest]")


def test_clip_of_one_long_line_cuts_inside_it():
    """A single line over the limit is cut inside the line, with the count of chars left."""
    out = clip("y" * 1000, limit=100)
    assert len(out) <= 100 and "more chars not shown; narrow the request" in out


def test_clip_middle_keeps_head_and_tail():
    """Process output keeps its start and its end (the traceback) around a marker."""
    text = "".join(f"out {i}\n" for i in range(1000)) + "Traceback: boom\n"
    out = clip_middle(text, limit=200, where="sandbox_runs/r1/stdout")
    assert out.startswith("out 0\n") and out.endswith("Traceback: boom\n")
    assert "lines (" in out and "omitted; full text: sandbox_runs/r1/stdout ..." in out
    assert len(out) < 300


def test_plain_strips_colour_and_redraws():
    """ANSI colours and carriage-return progress redraws are removed."""
    assert plain("\x1b[31mred\x1b[0m ok\n10%\r50%\r100%") == "red ok\n100%"


def test_number_lines_aligns_numbers():
    """Line numbers are right-aligned to the widest one and start where asked."""
    assert number_lines(["a", "b"], first=9) == " 9 a\n10 b\n"


def test_limited_to_sets_the_default_limit_of_a_block():
    """Inside limited_to(n), clip without a limit cuts at n; outside, at DEFAULT_LIMIT."""
    text = "z\n" * 5000
    with limited_to(100):
        assert output_limit() == 100 and len(clip(text)) <= 100
    assert output_limit() == DEFAULT_LIMIT and len(clip(text)) <= DEFAULT_LIMIT
