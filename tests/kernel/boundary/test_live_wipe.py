"""A live check's fork overwrites the secrets liveforge keeps before the snippet runs: what
the kernel holds, the scrubbers' values and compiled patterns, and a variable's copy in the
C environment; the parent keeps every one of them."""

from __future__ import annotations

import ctypes
import os
import sys
import textwrap
import types
from collections.abc import Iterator

import pytest
from secret_probes import MODULES, fake_key, leaked

from liveforge.kernel.boundary._secrets import Scrubber, environment_secrets, hold
from liveforge.kernel.checks import _livefork

pytestmark = pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")


@pytest.fixture
def front_end() -> Iterator[types.ModuleType]:
    """A module standing for the front end's own objects, found through sys.modules."""
    module = sys.modules["probe_front_end"] = types.ModuleType("probe_front_end")
    yield module
    del sys.modules["probe_front_end"]


def _live(code: str) -> _livefork.LiveCheck:
    checked = _livefork.run_live(code, timeout=30)
    assert checked.status == "passed", checked
    return checked


def test_held_keys_and_scrubbers_are_blank_in_the_fork_and_intact_here(
    front_end: types.ModuleType,
) -> None:
    key = fake_key("held")
    front_end.key = hold(key)  # as the configuration's SecretStr keeps it
    scrubber = Scrubber.of([key])
    assert scrubber.text(f"x {key} y") == "x [redacted] y"
    checked = _live(MODULES)
    assert not leaked(checked.stdout, [key]), checked.stdout
    assert front_end.key == key and hold(key) is front_end.key
    assert key in environment_secrets() and scrubber.text(key) == "[redacted]"


def test_a_scrubbers_compiled_patterns_keep_no_character_of_the_key(
    front_end: types.ModuleType,
) -> None:
    """A compiled pattern holds its literals as 32-bit codes; the fork zeroes them (here
    the patterns are kept alive on purpose, to read their memory after the fork let go)."""
    key = fake_key("pattern")
    scrubber = Scrubber.of([key])
    front_end.patterns = [scrubber._pattern, scrubber._bytes]
    code = textwrap.dedent("""
        import array, ctypes, sys
        for pattern in sys.modules["probe_front_end"].patterns:
            words = array.array("I", ctypes.string_at(id(pattern), pattern.__sizeof__()))
            print("".join(chr(w) for w in words if 32 < w < 127))
        subject = "text" if isinstance(pattern.pattern, str) else b"text"
        print("matches:", pattern.search(subject))  # nothing, and no crash
    """)
    before = ["".join(chr(w) for w in _words(p) if 32 < w < 127) for p in front_end.patterns]
    assert all(key[3:-3] in text for text in before)  # the test reads what it means to
    checked = _live(code)
    assert not leaked(checked.stdout, [key]) and key[3:-3] not in checked.stdout
    assert "matches: None" in checked.stdout
    assert scrubber.text(key) == "[redacted]"


def _words(pattern: object) -> list[int]:
    size = pattern.__sizeof__()
    return list((ctypes.c_uint32 * (size // 4)).from_address(id(pattern)))


def test_a_variable_set_while_running_is_overwritten_where_c_kept_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`setenv` copies the value into memory of the C library's; the fork overwrites that
    copy and unsets the variable (getenv finds nothing), and keeps other variables."""
    key = fake_key("setenv")
    monkeypatch.setenv("PROBE_API_KEY", key)
    monkeypatch.setenv("PROBE_VISIBLE", "stays-readable")
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_void_p
    address = libc.getenv(b"PROBE_API_KEY")
    assert ctypes.string_at(address) == key.encode()
    code = textwrap.dedent(f"""
        import ctypes, os
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        copy = ctypes.string_at({address}, {len(key)}).decode("utf-8", "replace")
        print(copy[::-1], libc.getenv(b"PROBE_API_KEY"), libc.getenv(b"PROBE_VISIBLE"))
        print("PROBE_API_KEY" in os.environ, os.environ["PROBE_VISIBLE"])
    """)
    checked = _live(code)
    assert not leaked(checked.stdout, [key]), checked.stdout
    assert checked.stdout.splitlines()[0].endswith(" None b'stays-readable'")
    assert checked.stdout.splitlines()[1] == "False stays-readable"
    assert os.environ["PROBE_API_KEY"] == key
