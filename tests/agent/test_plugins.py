"""Plugins: a real distribution found by its entry point adds a tool, a CLI command and
hooks; hooks can veto or change tool calls and requests; a raising hook is reported and the
turn goes on."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.plugins import PluginHost
from liveforge.impls import plugins as plugins_impl
from liveforge.testing import reply

PLUGIN = """
from liveforge.declarations.plugins import ToolVeto, hookimpl


@hookimpl
def liveforge_tool_modules():
    return ["lfplug.tools"]


@hookimpl
def liveforge_cli(commands):
    parser = commands.add_parser("shout", help="say it loudly")
    parser.add_argument("text")
    parser.set_defaults(handler=lambda args: print(args.text.upper()) or 0)


@hookimpl
def before_tool_call(name, arguments):
    if name == "view_source":
        return ToolVeto("view_source is switched off here")


@hookimpl
def after_model_response(response):
    raise RuntimeError("boom")
"""
TOOLS = '''
from liveforge.declarations.permissions import effect

__all__ = ["shout"]


@effect("read")
def shout(text: str) -> str:
    """Say `text` loudly.

    Args:
        text: what to say
    """
    return text.upper() + "!"
'''
DRIVER = """
import asyncio, json, sys
from liveforge.agent_setup import build_agent
from liveforge.declarations.provider import Provider, RetryPolicy
from liveforge.testing import FakeProvider, reply

script = [reply.tool_call("shout", {"text": "hi"}).tool_call("view_source", {"path": "x"}),
          reply.text("done")]
with FakeProvider(script) as fake:
    provider = Provider([fake.route("anthropic")], retry=RetryPolicy(max_attempts=1))
    agent = build_agent(sys.argv[1], provider=provider, env={})
    async def turn():
        return [e.model_dump(mode="json") async for e in agent.run("go")]
    events = asyncio.run(turn())
    agent.runtime.close()
print(json.dumps(events))
"""


def _wheel(folder: Path) -> Path:
    """A wheel of the `lfplug` distribution with its `liveforge.plugins` entry point."""
    info = "lfplug-1.0.dist-info"
    files = {
        "lfplug/__init__.py": PLUGIN,
        "lfplug/tools.py": TOOLS,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: lfplug\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": "[liveforge.plugins]\nlfplug = lfplug\n",
    }
    path = folder / "lfplug-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"]))
    return path


def _plugin_venv(tmp_path: Path) -> Path:
    """A virtualenv that sees liveforge and has the `lfplug` distribution installed by pip."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    target = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # liveforge and its dependencies come from the environment running the tests
    (Path(target) / "parent.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    installed = subprocess.run(
        [*pip, "--target", target, str(_wheel(tmp_path))], capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr
    return python


def test_an_installed_plugin_adds_a_tool_a_command_and_hooks(tmp_path: Path, project) -> None:
    """In a virtualenv with the plugin installed: its tool runs, its veto refuses a call,
    its raising hook becomes a notice, the turn still answers, and `liveforge shout` works."""
    root, _ = project
    python = _plugin_venv(tmp_path)
    ran = subprocess.run(
        [python, "-c", DRIVER, str(root)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    events = json.loads(ran.stdout)
    finished = [(e["name"], e["is_error"]) for e in events if e["type"] == "tool_finished"]
    assert finished == [("shout", False), ("view_source", True)]
    notices = [e["text"] for e in events if e["type"] == "notice" and e["kind"] == "plugin"]
    assert notices and "'lfplug' failed in after_model_response: RuntimeError: boom" in notices[0]
    assert events[-1]["type"] == "turn_ended" and events[-1]["reason"] == "answer"
    command = subprocess.run(
        # this interpreter, even where the checkout has a .venv of its own
        [python, "-m", "liveforge", "--this-python", "shout", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (command.returncode, command.stdout.strip()) == (0, "HELLO"), command.stderr


LOCAL = """
from liveforge.declarations.plugins import hookimpl

seen = []


@hookimpl
def before_tool_call(name, arguments):
    if name == "view_source":
        return {**arguments, "path": arguments["path"].replace("wrong", "geometry")}


@hookimpl
def after_tool_call(name, arguments, result, is_error):
    seen.append((name, arguments["path"], is_error))


@hookimpl
def model_override(request):
    return "plugin-chosen-model"


@hookimpl
def before_model_request(request):
    return request.model_copy(update={"temperature": 0.25})
"""


def test_project_plugins_change_arguments_and_requests(project, fake) -> None:
    """A `.liveforge/plugins` module rewrites a tool's arguments, sees its result, and picks
    the model and temperature of every request."""
    root, pkg = project
    (root / ".liveforge" / "plugins").mkdir(parents=True, exist_ok=True)
    (root / ".liveforge" / "plugins" / "steer.py").write_text(LOCAL)
    fake.add(
        reply.tool_call("view_source", {"path": f"{pkg}.wrong.area"}),
        reply.text("ok"),
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "look")
    assert [f.is_error for f in of_type(events, "tool_finished")] == [False]
    steer = sys.modules["liveforge_project_plugins.steer"]
    assert steer.seen == [("view_source", f"{pkg}.geometry.area", False)]
    assert {r.body["model"] for r in fake.requests} == {"plugin-chosen-model"}
    assert {r.body["temperature"] for r in fake.requests} == {0.25}
    agent.runtime.close()


class _Wrapper:
    from liveforge.declarations.plugins import hookimpl

    @hookimpl(wrapper=True)
    def before_tool_call(self, name, arguments):
        return (yield)


class _Typo:
    from liveforge.declarations.plugins import hookimpl

    @hookimpl
    def before_tool_cal(self, name):
        return None


def test_unusable_plugins_are_reported_by_name() -> None:
    """A wrapper is refused (it cannot be isolated); a misspelt hook is reported; a bad
    signature is rejected by pluggy's own check."""

    class BadArgs:
        from liveforge.declarations.plugins import hookimpl

        @hookimpl
        def before_tool_call(self, name, nonsense):
            return None

    host = PluginHost()
    host.register(_Wrapper(), "wrap")
    host.register(_Typo(), "typo")
    host.register(BadArgs(), "bad")
    problems = "\n".join(host.problems)
    assert "'wrap' rejected: before_tool_call is a hook wrapper" in problems
    assert "'typo': before_tool_cal is not a liveforge hook" in problems
    assert "'bad' rejected" in problems and "nonsense" in problems
    assert host.names() == ["typo"]


def _dist(folder: Path, name: str) -> None:
    """An installed distribution `name` (a module of that name and its dist-info with a
    `liveforge.plugins` entry point) in `folder`."""
    (folder / f"{name}.py").write_text("")
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[liveforge.plugins]\n{name} = {name}\n")


def test_installed_plugins_are_read_again_only_when_a_path_folder_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building an agent does not read every distribution's metadata again; a plugin
    installed later (its folder changes) is found by the next host."""
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    _dist(site_dir, "lfcache_one")
    monkeypatch.syspath_prepend(str(site_dir))
    first = PluginHost().load()
    assert "lfcache_one" in first.names()
    assert plugins_impl._installed_plugins() is plugins_impl._installed_plugins()
    time.sleep(0.01)  # a later modification time than the folder's first one
    _dist(site_dir, "lfcache_two")
    assert {"lfcache_one", "lfcache_two"} <= set(PluginHost().load().names())
