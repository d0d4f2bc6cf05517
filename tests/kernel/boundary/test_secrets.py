"""Secret values are scrubbed in every encoding a program prints them in, also when a
stream splits them across chunks."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from liveforge.kernel.boundary._secrets import (
    REDACTED,
    Scrubber,
    environment_secrets,
    without_secrets,
)
from liveforge.kernel.checks._capture import CappedSink

KEY = 'sk-live-"odd"/key+é\\0123456789'


def printed_forms(key: str) -> list[str]:
    raw = key.encode()
    forms = [key, repr(key), ascii(key), repr(raw), json.dumps({"k": key}), key.encode().hex()]
    forms += [json.dumps(key, ensure_ascii=False), quote(key), quote(key, safe=""), quote_plus(key)]
    for prefix in (b"", b"a", b"ab", b"Authorization: Bearer "):
        forms.append(base64.b64encode(prefix + raw + b"tail").decode())
        forms.append(base64.urlsafe_b64encode(prefix + raw).decode())
    return forms


@pytest.mark.parametrize("form", printed_forms(KEY))
def test_every_printed_form_is_scrubbed(form: str) -> None:
    text = Scrubber([KEY]).text(f"before {form} after")
    assert REDACTED in text
    assert "0123456789" not in text and "MDEyMzQ1Njc4" not in text  # plain, or base64 core


def test_short_values_and_ordinary_text_are_left_alone() -> None:
    scrub = Scrubber(["short", KEY])
    assert scrub.text("a short story about keys") == "a short story about keys"


def test_a_secret_split_across_chunks_never_reaches_the_file(tmp_path: Path) -> None:
    data = ("x" * 1000 + KEY + "\n").encode() * 3
    sink = CappedSink(tmp_path / "out.txt", scrubber=Scrubber([KEY]))
    for start in range(0, len(data), 7):  # chunk edges fall inside every copy of the key
        sink.write(data[start : start + 7])
    sink.close()
    written = (tmp_path / "out.txt").read_text()
    assert KEY not in written and written.count(REDACTED) == 3
    assert sink.text() == written


def test_environment_secrets_cover_names_and_comma_lists() -> None:
    env = {"OPENAI_API_KEYS": "key-one-12345678, key-two-12345678", "HOME": "/home/someone"}
    assert {"key-one-12345678", "key-two-12345678"} <= set(environment_secrets(env))
    assert without_secrets(env) == {"HOME": "/home/someone"}
