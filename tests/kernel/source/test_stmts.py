"""The statement index kept up to date incrementally equals a full parse of the new text."""

from __future__ import annotations

import ast
import random

import pytest

from liveforge.kernel.source._stmts import Index, Stmt, index, reindex, split_lines

PIECES = [
    "from __future__ import annotations\n",
    "import os\n",
    "from os.path import *\n",
    "X = 1; Y = 2\n",
    "Z = (\n    3,\n)\n",
    "def f(x):\n    return x\n",
    "@decorate\ndef g():\n    pass\n",
    "class C:\n    a = 1\n\n    def m(self):\n        return 1\n",
    "# a comment\n",
    "\n",
    "for i in range(2):\n    W = i\n",
    "try:\n    import json\nexcept ImportError:\n    json = None\n",
    "if X:\n    def h():\n        pass\n",
    "async def k():\n    await thing()\n",
]


def _module(rng: random.Random, count: int) -> list[str]:
    return [rng.choice(PIECES) for _ in range(count)]


def _shape(idx: Index) -> tuple[object, ...]:
    stmts = [
        (s.start, s.end, s.text, s.binds, ast.dump(s.fresh_node(), include_attributes=True))
        for s in idx.stmts
    ]
    return (idx.lines, stmts, idx.future_flags, idx.bound, idx.stars)


@pytest.mark.parametrize("seed", range(40))
def test_reindex_equals_a_full_parse(seed: int):
    rng = random.Random(seed)
    pieces = _module(rng, rng.randint(3, 12))
    old = index("".join(pieces))
    for _ in range(6):
        at = rng.randrange(len(pieces) + 1)
        cut = rng.randint(0, 2)
        pieces[at : at + cut] = _module(rng, rng.randint(0, 2))
        if not pieces:
            pieces = _module(rng, 1)
        source = "".join(pieces)
        try:
            full = index(source)
        except Exception:
            continue  # a piece order that does not compile (a future import after code)
        for known in (False, True):
            if known:
                lines = split_lines(source)
                lo, hi = 0, len(old.lines)
                while lo < min(len(lines), hi) and lines[lo] == old.lines[lo]:
                    lo += 1
                new = reindex(old, source, "<m>", lines=lines, changed=(lo, hi)).index
            else:
                new = reindex(old, source, "<m>").index
            assert _shape(new) == _shape(full), (seed, source)
        old = new


def test_a_given_statement_is_taken_as_it_is():
    source = "A = 1\n\ndef f():\n    return 1\n\nB = 2\n"
    old = index(source)
    text = "def f():\n    x = 2\n    return x\n"
    node = ast.parse("\n" * 2 + text).body[0]
    given = Stmt(3, 5, text, node, frozenset({"f"}), alone=True)
    new_source = "A = 1\n\n" + text + "\nB = 2\n"
    result = reindex(
        old, new_source, "<m>", lines=split_lines(new_source), changed=(2, 4), given=given
    )
    assert result.new_run == [given]
    assert _shape(result.index) == _shape(index(new_source))
    assert [(s.start, s.end) for s in result.tail] == [(7, 7)]
