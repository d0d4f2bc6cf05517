"""Declarations check their constructor fields, and implementation state has declared,
typed homes: no hidden `__dict__` slots, no free-form `Session.extra`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import liveforge.impls  # noqa: F401  (registers the bodies)
from liveforge.declarations.agent import Agent
from liveforge.declarations.compaction import Compactor, ContextSettings
from liveforge.declarations.contract import ContractFieldError
from liveforge.declarations.session import Session
from liveforge.declarations.toolbox import Toolbox
from liveforge.kernel import Runtime

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCES = ["kernel", "declarations", "impls", "tools", "liveforge", "bench"]
SIDE_SLOT = re.compile(r"""__dict__(\[|\.get\(|\.pop\(|\.setdefault\()\s*["']_[A-Za-z]""")
EXTRA_KEY = re.compile(r"""\.extra(\[|\.get\(|\.pop\(|\.setdefault\()""")


def _source_files() -> list[Path]:
    files = []
    for folder in SOURCES:
        files += [p for p in (ROOT / folder).rglob("*.py") if not p.parent.is_symlink()]
    return [p for p in files if not any(part.is_symlink() for part in p.parents)]


def test_a_misspelled_field_is_refused_with_a_suggestion(tmp_path: Path):
    """`Toolbox(runtim=rt)` raises, naming the bad field, the likely one and what is missing."""
    rt = Runtime(project_root=tmp_path)
    with pytest.raises(ContractFieldError) as caught:
        Toolbox(runtim=rt, limit=100)
    message = str(caught.value)
    assert "unknown field 'runtim' (did you mean 'runtime'?)" in message
    assert "missing 'runtime'" in message and "runtime, packages, limit" in message
    assert isinstance(caught.value, TypeError)


def test_missing_required_fields_are_named():
    """An Agent built without its parts says which ones it needs."""
    with pytest.raises(ContractFieldError, match="missing 'runtime', 'provider'"):
        Agent(settings=None)


def test_optional_fields_take_their_default_and_fresh_state_is_per_object(tmp_path: Path):
    """Defaults apply when a field is left out; `fresh(...)` gives every object its own."""
    rt = Runtime(project_root=tmp_path)
    one, two = Toolbox(runtime=rt, limit=10), Toolbox(runtime=rt, limit=10)
    assert one.packages == [] and one.packages is not two.packages
    assert Compactor(settings=ContextSettings()).settings.window == 200_000
    first, second = Session.create(tmp_path), Session.create(tmp_path)
    assert first.live is not second.live and first.epoch == 1 and not first.open_turn
    assert "extra" not in Session._contract_fields


def test_no_hidden_state_slots_or_free_form_session_keys_remain():
    """No `obj.__dict__["_x"]` side slots and no `Session.extra` string keys in the sources."""
    files = _source_files()
    assert len(files) > 80
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SIDE_SLOT.search(line) or EXTRA_KEY.search(line)
    ]
    assert found == []


def test_the_grep_catches_what_it_is_for():
    """The patterns above match the shapes they forbid (so the test above can fail)."""
    assert SIDE_SLOT.search('state = agent.__dict__.get("_state")')
    assert SIDE_SLOT.search("prompt.__dict__['_cache'] = {}")
    assert not SIDE_SLOT.search('main.__dict__["__builtins__"] = builtins')
    assert EXTRA_KEY.search('session.extra["epoch"] += 1')
