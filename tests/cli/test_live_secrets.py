"""No key reaches a live check, in any form: the fork of the front end finds none in
/proc/self/environ, os.environ, the C environment, the configuration's credentials, the
scrubbers or anywhere else liveforge keeps one, through `liveforge verify` and the Python
API alike. The front ends are real processes started with the keys in their environment
(so the keys are in their initial environment block, as for a user)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_support import cli_env, run_cli
from secret_probes import ENVIRONMENT, EVERY_OBJECT, MODULES, VISIBLE, fake_key, leaked

from liveforge.kernel.checks import _livefork

pytestmark = pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")

PROBES = {"environment": ENVIRONMENT, "modules": MODULES, "every_object": EVERY_OBJECT}
PROVIDER = """
[tool.liveforge]
model = "work:some-model"
fallback_models = ["openai:gpt-4o"]

[tool.liveforge.providers.work]
protocol = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = ["WORK_LLM_CREDENTIAL"]
"""
"""A provider whose key comes from a variable not named like a secret."""


@pytest.fixture
def keyed(sample: Path) -> tuple[Path, dict[str, str]]:
    """The sample project with the provider configured, and an environment with keys: one
    by a secret's name, one of the configured provider's, and a plain variable."""
    with (sample / "pyproject.toml").open("a") as handle:
        handle.write(PROVIDER)
    env = {
        "OPENAI_API_KEY": fake_key("openai"),
        "WORK_LLM_CREDENTIAL": fake_key("work"),
        VISIBLE[0]: VISIBLE[1],
    }
    return sample, env


def _keys(env: dict[str, str]) -> list[str]:
    return [env["OPENAI_API_KEY"], env["WORK_LLM_CREDENTIAL"]]


def _files(root: Path) -> str:
    return "".join(
        p.read_text(errors="replace") for p in (root / "sandbox_runs").rglob("*") if p.is_file()
    )


@pytest.mark.parametrize("probe", list(PROBES))
def test_liveforge_verify_lets_no_key_into_the_live_check(
    keyed: tuple[Path, dict[str, str]], probe: str
) -> None:
    project, env = keyed
    done = run_cli("verify", "--json", "-c", PROBES[probe], cwd=project, **env)
    live = json.loads(done.stdout)["run"]["live"]
    # its message and output say why, should it ever not pass
    assert live["status"] == "passed", (live.get("message"), live.get("stderr"))
    assert not leaked(done.stdout + done.stderr, _keys(env))
    assert not leaked(_files(project), _keys(env))
    if probe == "environment":  # other variables stay readable, and the probe saw them
        assert f"{VISIBLE[0]}={VISIBLE[1]}"[::-1] in live["stdout"]
        assert VISIBLE[1][::-1] in live["stdout"]  # through getenv too


def test_the_reported_reversal_gets_no_key_out_in_text_output(
    keyed: tuple[Path, dict[str, str]],
) -> None:
    """The report's own snippet, through the text output."""
    project, env = keyed
    code = "[x[::-1] for x in open('/proc/self/environ').read().split(chr(0)) if 'KEY' in x]"
    done = run_cli("verify", code, cwd=project, **env)
    assert "live process: passed" in done.stdout, done.stdout + done.stderr
    assert "YEK_IPA_IANEPO" in done.stdout  # the name is there, its value is not
    assert not leaked(done.stdout + done.stderr + _files(project), _keys(env))


API_FRONT_END = textwrap.dedent("""
    import json, sys, types
    from liveforge import Runtime
    from liveforge.config import build_provider, load_config
    from liveforge.kernel.boundary._secrets import Scrubber

    root, probes = sys.argv[1], json.loads(sys.stdin.read())
    front = sys.modules["probe_front_end"] = types.ModuleType("probe_front_end")
    front.config = load_config(root)
    front.provider = build_provider(front.config)  # the credentials, as an agent holds them
    front.scrubber = Scrubber.current()
    front.own = "sk-fake-program-state-not-a-secret"
    rt = Runtime(project_root=root, check_settings=front.config.sandbox.settings(root))
    out = {}
    for name, code in probes.items():
        check = rt.verify(code)
        out[name] = {"live": check.live.model_dump(mode="json"), "text": check.summary()}
    keys = [c.key.get_secret_value() for r in front.provider.routes for c in r.credentials]
    out["scrubbed_here"] = Scrubber.current().text(" ".join(keys))
    rt.close()
    print(json.dumps(out))
""")


def test_the_python_api_lets_no_key_into_the_live_check(
    keyed: tuple[Path, dict[str, str]],
) -> None:
    """A program using the API, holding a provider built from the configuration, verifies
    every probe; its own keys are intact afterwards (only the forks lost them)."""
    project, env = keyed
    done = subprocess.run(
        [sys.executable, "-c", API_FRONT_END, str(project)],
        input=json.dumps(PROBES),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=cli_env(**env),
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for name in PROBES:
        assert out[name]["live"]["status"] == "passed", out[name]
    assert not leaked(done.stdout + done.stderr + _files(project), _keys(env))
    # the walk reached the program's module: its own string is there, reversed
    assert "sk-fake-program-state-not-a-secret"[::-1] in out["modules"]["live"]["stdout"]
    assert VISIBLE[1][::-1] in out["environment"]["live"]["stdout"]
    assert out["scrubbed_here"] == "[redacted] [redacted]"
