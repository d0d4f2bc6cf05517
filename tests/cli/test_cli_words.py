"""Errors at the command line are said in its words: commands, not API calls; the
project's names first; one JSON object under --json, usage errors included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import FIX, run_cli

from liveforge.testing import FakeProvider


def test_an_unknown_module_lists_the_project_before_the_standard_library(sample: Path):
    """`inspect nope`: the project's packages come first, then other close matches; no tool
    or API function is named."""
    result = run_cli("inspect", "nope", cwd=sample)
    assert result.returncode == 3
    message = result.stderr
    assert "'nope' was not found; the project has: pricing; close matches elsewhere:" in message
    assert "inspect_module" not in message and "()" not in message
    close = run_cli("inspect", "pricng", cwd=sample).stderr
    assert "close matches: pricing," in close


def test_a_mistyped_last_name_is_matched_on_that_name_alone(sample: Path):
    """`view pricing.nope` offers no `pricing.__all__` (close only by the shared `pricing.`);
    `view pricing.cart.Line.subtotl` offers `subtotal`, and nothing else of `Line`."""
    far = run_cli("view", "pricing.nope", cwd=sample)
    assert far.returncode == 3
    assert "__all__" not in far.stderr and "close matches" not in far.stderr
    near = run_cli("view", "pricing.cart.Line.subtotl", cwd=sample)
    assert "close matches: pricing.cart.Line.subtotal." in near.stderr


def test_a_patch_of_several_definitions_says_what_to_give_instead(sample: Path):
    """A definition target given a file of other definitions: the advice is a --patch of
    the whole module, not `patch_module()`."""
    (sample.parent / "fix.py").write_text(FIX)
    result = run_cli(
        "verify", "--patch", f"pricing.cart.Line.nope={sample.parent}/fix.py", cwd=sample
    )
    assert result.returncode == 3
    assert "patch_module" not in result.stderr
    assert "patch the whole module: --patch MODULE=FILE" in result.stderr


def test_a_patch_that_breaks_the_check_itself_says_to_leave_it_out(sample: Path):
    """A --outside-project patch of `json.dumps`, which the check's machinery uses: exit 3,
    and the advice is to leave that --patch out, not to roll a change back."""
    (sample / "jd.py").write_text("def dumps(obj, **kw):\n    return 'x'\n")
    result = run_cli(
        "verify", "--patch", "json.dumps=jd.py", "--outside-project", "-c", "1", cwd=sample
    )
    assert result.returncode == 3
    assert "the patch broke the check itself (c1 (json.dumps))" in result.stderr
    assert "Leave that --patch out to check the others." in result.stderr
    assert "Roll it back" not in result.stderr


def test_a_window_past_a_definition_names_its_lines_not_the_tool_s_arguments(sample: Path):
    """`view X --start N` past X's last line says which lines X has and the line asked for,
    not the tool's `start=N`."""
    result = run_cli("view", "pricing.cart.Line", "--start", "900", cwd=sample)
    assert result.returncode == 0, result.stderr
    assert "nothing to show at line 900." in result.stdout
    assert "start=" not in result.stdout


def test_a_folder_given_as_the_patch_file_is_called_a_folder(sample: Path):
    """--patch T=DIR says the path is a folder (exit 2), not that it does not exist."""
    result = run_cli("verify", "--patch", f"pricing.cart={sample}", cwd=sample)
    assert result.returncode == 2
    assert f"{sample} is a folder; give the file that holds the new source" in result.stderr


def test_a_device_given_as_the_patch_file_is_not_called_missing(sample: Path):
    """--patch T=/dev/null: the path exists but is no regular file, and says so (exit 2)."""
    result = run_cli("verify", "--patch", "pricing.cart=/dev/null", cwd=sample)
    assert result.returncode == 2
    assert "/dev/null is not a regular file" in result.stderr
    assert "does not exist" not in result.stderr


def test_usage_errors_under_json_print_one_json_object(sample: Path):
    """argparse's errors (unknown option, bad value, unknown command) print the JSON error
    object under --json, and suggest the closest command."""
    for argv, command in (
        (["--json", "verify", "--bogus"], "verify"),
        (["inspect", "--depth", "x", "--json"], "inspect"),
        (["inspct", "--json"], None),
    ):
        result = run_cli(*argv, cwd=sample)
        assert result.returncode == 2
        data = json.loads(result.stdout)
        assert data["ok"] is False and data["command"] == command
        assert data["error"]["exit_code"] == 2 and data["error"]["type"] == "UsageError"
        assert data["error"]["message"] in result.stderr
    assert "did you mean 'inspect'?" in data["error"]["message"]
    assert "usage:" not in run_cli("inspct", cwd=sample).stdout  # text mode: stdout stays empty


@pytest.mark.parametrize(
    ("table", "typo", "key"),
    [("agent", "max_tokns", "max_tokens"), ("sandbox", "memroy_mb", "memory_mb")],
)
def test_an_unknown_config_key_gets_did_you_mean(sample: Path, table: str, typo: str, key: str):
    """A misspelt key is a usage error naming the right one: under [tool.liveforge.agent]
    (the whole configuration is read) and under [tool.liveforge.sandbox] (what a one-shot
    check reads on its own), in the same words."""
    with (sample / "pyproject.toml").open("a") as file:
        file.write(f"\n[tool.liveforge.{table}]\n{typo} = 5\n")
    result = run_cli("verify", "1", cwd=sample)
    assert result.returncode == 2
    assert f"tool.liveforge.{table}.{typo}" in result.stderr
    assert f"did you mean `{key}`?" in result.stderr


def test_connection_errors_show_the_url_tried(sample: Path):
    """A refused connection and a malformed base URL both name the URL tried (without the
    password a base URL may carry)."""
    with FakeProvider(script=[]) as fake:
        port = fake.base_url.rsplit(":", 1)[1].strip("/")
    refused = f"http://user:secret@127.0.0.1:{port}"  # the fake is gone: nothing listens
    # one attempt: the error is the same after the backoff's retries, only later
    with (sample / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n[tool.liveforge.retry]\nmax_attempts = 1\n")
    for base, shown in (
        (refused, f"(POST http://127.0.0.1:{port}/v1/messages)"),
        ("htp:/bad url", "(POST 'htp:/bad url/v1/messages')"),
    ):
        result = run_cli(
            "run",
            "-p",
            "hi",
            "--yes",
            "--json",
            cwd=sample,
            ANTHROPIC_API_KEY="test-key",
            ANTHROPIC_BASE_URL=base,
            LIVEFORGE_MODEL="anthropic:test-model",
        )
        assert result.returncode != 0
        assert shown in json.loads(result.stdout)["error"]["message"]
        assert "secret" not in result.stdout + result.stderr
