"""`liveforge watch` on a real Flask app served on loopback: saves after the first request."""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

import pexpect
import pytest
from cli_support import cli_env
from saves import save_like_an_editor

pytest.importorskip("flask")

SERVER = """\
from werkzeug.serving import make_server

from shop.views import app

server = make_server("127.0.0.1", 0, app, threaded=True)
print("port", server.server_port, flush=True)
server.serve_forever()
"""

VIEWS = """\
from flask import Flask

app = Flask(__name__)
CALLS = []


def registering(func):
    CALLS.append(func.__name__)
    return func


@app.route("/hello")
@registering
def hello():
    return "hello 1"


@app.route("/calls")
def calls():
    return ",".join(CALLS)
"""


def _serve(tmp_path: Path) -> tuple[pexpect.spawn, Path, str]:
    """The app under `liveforge watch`, after it served its first request."""
    root = tmp_path / "proj"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "views.py").write_text(VIEWS)
    (root / "server.py").write_text(SERVER)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "watch", "--project", str(root), "--", "server.py"],
        cwd=str(root),
        env=cli_env(),
        encoding="utf-8",
        timeout=60,
    )
    child.expect(r"port (\d+)\r\n")
    base = f"http://127.0.0.1:{child.match.group(1)}"
    assert _get(base, "/hello") == "hello 1"  # Flask now refuses new routes
    return child, root / "shop" / "views.py", base


def _get(base: str, path: str) -> str:
    handler = urllib.request.ProxyHandler({})  # loopback only, whatever the environment
    with urllib.request.build_opener(handler).open(base + path, timeout=30) as response:
        return response.read().decode()


def _stop(child: pexpect.spawn) -> None:
    child.kill(9)
    child.close()


def test_a_renamed_view_flask_refuses_is_said_and_the_old_one_keeps_serving(tmp_path: Path):
    """Once the app served a request, Flask refuses to register a route: a save renaming a
    view to a new URL, next to a good edit of another view, is refused with Flask's reason
    and the edits it left out; the old URL keeps serving the old view; a second such save
    is said again."""
    child, views, base = _serve(tmp_path)
    renamed = VIEWS.replace('@app.route("/hello")', '@app.route("/greet")')
    renamed = renamed.replace("def hello():", "def greet():").replace('",".join', '"+".join')
    save_like_an_editor(views, renamed)
    child.expect(r"kept old code: shop\.views: not applied \(PatchExecutionError: [^\r\n]*")
    line = child.match.group(0)
    assert "can no longer be called on the application" in line
    assert "none of the save's edits (~calls +greet -hello) applied" in line
    assert "the old code keeps running" in line
    assert _get(base, "/hello") == "hello 1"
    assert _get(base, "/calls") == "hello"

    save_like_an_editor(views, renamed.replace("def greet():", "def greeting():"))
    child.expect(r"kept old code: shop\.views: not applied \(PatchExecutionError: [^\r\n]*")
    assert "+greeting -hello" in child.match.group(0)
    save_like_an_editor(views, VIEWS)
    child.expect_exact("in sync: shop.views: memory and file agree again")
    _stop(child)


def test_a_view_body_edit_applies_after_the_first_request(tmp_path: Path):
    """Editing only a view's body after the app served a request applies: the URL serves
    the new body, and the registering decorator is not called again."""
    child, views, base = _serve(tmp_path)
    save_like_an_editor(views, VIEWS.replace('"hello 1"', '"hello 2"'))
    child.expect(r"\[liveforge\] (applied|kept old code)[^\r\n]*")
    assert child.match.group(1) == "applied", child.match.group(0)
    assert _get(base, "/hello") == "hello 2"
    assert _get(base, "/calls") == "hello"
    _stop(child)
