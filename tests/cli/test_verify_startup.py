"""`liveforge verify` starts fast and stays whole: it loads no agent stack when the
configuration holds only the checks' keys, it still reports a bad key anywhere, and it
honours the check keys it validated alone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from cli_support import cli_env, run_cli

from liveforge.check_config import CheckConfig
from liveforge.config import LiveforgeConfig
from liveforge.config_files import CHECK_KEYS

RUN_AND_LIST = textwrap.dedent("""
    import json, sys
    from liveforge.__main__ import main
    code = main(["verify", "--json", *sys.argv[2:]])
    with open(sys.argv[1], "w") as file:
        json.dump({"code": code, "modules": sorted(sys.modules)}, file)
""")
AGENT_STACK = {
    "liveforge.config",
    "liveforge.declarations.agent",
    "liveforge.declarations.provider",
    "liveforge.gateway.settings",
    "liveforge.impls",
    "httpx",
    "rich",
}


def _verify_modules(project: Path, tmp_path: Path, *args: str) -> tuple[dict, set[str]]:
    """`liveforge verify --json ARGS` in a child process: its JSON object and the modules
    it had imported when it was done."""
    listing = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, str(listing), *args],
        cwd=project,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    ran = json.loads(listing.read_text())
    assert ran["code"] == 0, done.stdout + done.stderr
    return json.loads(done.stdout), set(ran["modules"])


def test_verify_checks_without_loading_the_agent_stack(sample: Path, tmp_path: Path):
    """No declarations of the agent, no provider, no httpx and no rich (stderr is no
    terminal) for a verify whose configuration sets nothing (the sample's)."""
    result, modules = _verify_modules(sample, tmp_path, "1 + 1")
    assert result["ok"] is True and result["run"]["value_repr"] == "2"
    assert result["run"]["live"]["status"] == "passed"
    assert "liveforge.check_config" in modules
    assert modules & AGENT_STACK == set()


def test_verify_honours_the_sandbox_table_validated_alone(sample: Path, tmp_path: Path):
    """`[tool.liveforge.sandbox]` alone: still no agent stack, and the check gets the
    setting (network on)."""
    with (sample / "pyproject.toml").open("a") as file:
        file.write("\n[tool.liveforge.sandbox]\nnetwork = true\nmemory_mb = 1024\n")
    result, modules = _verify_modules(sample, tmp_path, "1 + 1")
    assert result["run"]["boundary"]["network"] is True
    assert result["run"]["boundary"]["limits"]["memory_mb"] == 1024
    assert modules & AGENT_STACK == set()


def test_a_bad_model_from_the_environment_is_still_reported(sample: Path):
    """LIVEFORGE_MODEL is no check key: verify validates the whole configuration and
    names the variable."""
    done = run_cli("verify", "1", cwd=sample, LIVEFORGE_MODEL="no-provider-here")
    assert done.returncode == 2
    assert "LIVEFORGE_MODEL" in done.stderr


def test_the_check_keys_are_the_check_configurations_fields():
    """`CHECK_KEYS` (read before pydantic is imported) names exactly `CheckConfig`'s
    fields, and the whole configuration has them too."""
    assert set(CheckConfig.model_fields) == CHECK_KEYS
    assert CHECK_KEYS <= set(LiveforgeConfig.model_fields)
