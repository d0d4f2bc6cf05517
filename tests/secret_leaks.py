"""A snippet that prints a fake key in every encoding the scrubber covers, and how to find
any of them in text; shared by the tests that follow a secret through run records,
`--json`, MCP and the model."""

from __future__ import annotations

import base64
import json
import textwrap
from urllib.parse import quote

KEY = 'sk-fake-"quoted"/key+0123456789abcdef'
"""The fake key: quotes, a slash and a plus, so each encoding differs from the others."""

LEAKS = textwrap.dedent("""
    import base64, json, urllib.parse
    key = open('.env').read().split('=', 1)[1].strip()
    print(repr(key))
    print(json.dumps({"key": key}))
    print("https://example.invalid/?k=" + urllib.parse.quote(key, safe=""))
    print(base64.b64encode(b"Authorization: " + key.encode()).decode())
    print(key.encode().hex())
    key
""")
"""Reads the key from the project's `.env` (write `FAKE_API_KEY=<KEY>` there first), prints
it repr-, JSON-, URL-, base64- and hex-encoded, and ends with it as the value."""


def forms_of(key: str) -> list[str]:
    """How LEAKS prints the key, computed here independently of the scrubber."""
    return [
        key,
        repr(key)[1:-1],
        json.dumps(key)[1:-1],
        quote(key, safe=""),
        base64.b64encode(b"Authorization: " + key.encode()).decode()[20:],
        key.encode().hex(),
        "0123456789abcdef",
    ]


def leaked(text: str) -> list[str]:
    """The forms of KEY found in `text`."""
    return [form for form in forms_of(KEY) if form in text]
