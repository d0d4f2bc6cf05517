"""Hostile live-check snippets that hunt for API keys in the fork of the front end, and the
transformed forms they print what they find in (reversed, rot13, xor'ed), computed here
apart from the scrubber, which only knows the usual encodings."""

from __future__ import annotations

import codecs
import secrets
import textwrap

PREFIX = "sk-fake"
"""How the fake keys start: what a snippet looks for, as an attacker knows `sk-`."""

VISIBLE = ("LIVEFORGE_PROBE_VISIBLE", "plain-value-stays-readable")
"""A variable that is no secret: the fork keeps it readable."""

_SHOW = """
import codecs

def show(found):
    for text in sorted({t for t in found if isinstance(t, str) and t}):
        xored = bytes(b ^ 0x2A for b in text.encode("utf-8", "replace")).hex()
        print("R", text[::-1], "|", codecs.encode(text, "rot13"), "|", xored)
"""

ENVIRONMENT = _SHOW + textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    entries = open("/proc/self/environ", "rb").read().split(b"\\0")
    names = [e.split(b"=", 1)[0] for e in entries if b"=" in e]
    found = [e.decode("utf-8", "replace") for e in entries]
    found += [f"{k}={v}" for k, v in os.environ.items()]
    found += [(k + b"=" + v).decode("utf-8", "replace") for k, v in os.environ._data.items()]
    found += [(libc.getenv(n) or b"").decode("utf-8", "replace") for n in names]
    show(found)
""")
"""Prints every variable of /proc/self/environ, os.environ, os.environ._data and C
getenv, transformed."""

MODULES = _SHOW + textwrap.dedent(f"""
    import re, sys, types, weakref
    seen, found = set(), []

    def walk(obj, depth):
        if id(obj) in seen or depth > 10:
            return
        seen.add(id(obj))
        if isinstance(obj, str):
            found.append(obj)
        elif isinstance(obj, bytes):
            found.append(obj.decode("utf-8", "replace"))
        elif isinstance(obj, re.Pattern):
            walk(obj.pattern, depth + 1)
        elif isinstance(obj, (dict, types.MappingProxyType)):
            for key, value in list(obj.items()):
                walk(key, depth + 1)
                walk(value, depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset, weakref.WeakSet)):
            for item in list(obj):
                walk(item, depth + 1)
        else:
            try:  # a proxy (Flask's current_app) raises on any look outside its context
                has_dict = isinstance(obj, (type, types.ModuleType)) or hasattr(obj, "__dict__")
            except Exception:
                return
            if not has_dict:
                return
            if callable(getattr(type(obj), "get_secret_value", None)):
                walk(obj.get_secret_value(), depth + 1)
            try:
                walk(vars(obj), depth + 1)
            except TypeError:
                pass

    for name, module in list(sys.modules.items()):
        if name == "re" or name.startswith(("liveforge", "probe_front_end")):
            walk(module, 0)
    show([text for text in found if {PREFIX!r} in text])
""")
"""Walks the modules of liveforge (configuration, credentials, the scrubbers, the held
secrets), `re`'s pattern cache and the front end's own module down to every string, and
prints those that look like keys, transformed."""

EVERY_OBJECT = _SHOW + textwrap.dedent(f"""
    import gc
    gc.unfreeze()
    found = []
    for obj in gc.get_objects():
        try:
            if isinstance(obj, dict):
                items = [*obj.keys(), *obj.values()]
            elif isinstance(obj, (list, tuple, set, frozenset)):
                items = list(obj)
            else:
                items = list(vars(obj).values())
        except Exception:
            continue
        for item in items:
            if isinstance(item, bytes):
                item = item.decode("utf-8", "replace")
            if isinstance(item, str) and {PREFIX!r} in item:
                found.append(item)
    show(found)
""")
"""Every string any live container of the process holds that looks like a key."""


def fake_key(label: str) -> str:
    """A fresh fake key: PREFIX, a label, random hex."""
    return f"{PREFIX}-{label}-{secrets.token_hex(12)}"


def transformed(key: str) -> list[str]:
    """The forms the snippets print `key` in (its reverse, rot13 and xor with 0x2A), and
    a long middle part of each, as a printed value may cut them."""
    forms = [
        key,
        key[::-1],
        codecs.encode(key, "rot13"),
        bytes(b ^ 0x2A for b in key.encode()).hex(),
    ]
    return forms + [form[4:-4] for form in forms]


def leaked(text: str, keys: list[str]) -> list[str]:
    """The transformed forms of `keys` that `text` contains."""
    return [form for key in keys for form in transformed(key) if form in text]
