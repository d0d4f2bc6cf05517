"""`liveforge run -p`: one agent task against the fake provider; JSON report and exit codes."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
from cli_support import FIX, run_cli

from liveforge.testing import FakeProvider, fault, reply

SCHEMA = json.loads((resources.files("liveforge.cli") / "schema.json").read_text())


def _env(fake: FakeProvider) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "LIVEFORGE_MODEL": "anthropic:test-model",
    }


def test_run_answers_with_patch_and_exit_0(sample: Path):
    """A task that patches and answers exits 0; --json lists the answer and the change."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Fixed the boundary in memory."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli(
            "run",
            "-p",
            "fix the bulk discount",
            "--json",
            "--mode",
            "auto-edit",
            cwd=sample,
            **_env(fake),
        )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # nothing but the one object on stdout
    jsonschema.validate(data, SCHEMA)
    assert data["ok"] is True and data["reason"] == "answer"
    assert data["answer"] == "Fixed the boundary in memory."
    assert [p["target"] for p in data["patches"]] == ["pricing.cart.Line.subtotal"]
    assert data["persisted"] == [] and "+        if self.quantity >= BULK_QUANTITY:" in data["diff"]
    assert data["cost_usd"] is None and data["usage"]["output_tokens"] > 0
    assert "tokens:" in result.stderr
    assert Path(data["transcript"]).is_file()
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_persist_in_auto_edit_is_refused_with_nobody_to_ask(sample: Path):
    """In auto-edit the patch runs; the persist would ask, and with nobody to ask it is
    refused with a message saying how to allow it. The file is unchanged."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {}),
        reply.text("I could not save it."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli(
            "run", "-p", "fix and save", "--json", "--mode", "auto-edit", cwd=sample, **_env(fake)
        )
        patched = fake.requests[1].body["messages"][-1]["content"][0]
        refused = fake.requests[2].body["messages"][-1]["content"][0]
    assert result.returncode == 4  # the persist asked for was not made
    assert json.loads(result.stdout)["refused"][0]["tool"] == "persist"
    assert not patched.get("is_error")
    assert refused["is_error"] is True and "needs the user's approval" in str(refused["content"])
    assert "--mode full-auto" in str(refused["content"])
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_persist_through_allowed_execute_still_needs_approval(sample: Path):
    """`rt.persist()` inside an execute the config allows asks the policy like the persist
    tool does: refused here, file unchanged."""
    (sample / "liveforge.toml").write_text('[permissions]\nallow = ["execute"]\n')
    code = "rt.persist(force=True)"
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("execute", {"code": code}),
        reply.text("Not saved."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli(
            "run", "-p", "fix and save", "--json", "--mode", "auto-edit", cwd=sample, **_env(fake)
        )
        answered = fake.requests[2].body["messages"][-1]["content"][0]
    assert result.returncode == 0
    assert "PermissionDenied" in str(answered["content"])
    assert "persist (write) needs the user's approval" in str(answered["content"])
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_yes_lets_the_persist_through(sample: Path):
    """--yes is full-auto: patch and persist run without a question and reach the file;
    nothing is left only in memory, and nothing says so."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {"force": True}),
        reply.text("Saved."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix and save", "--yes", cwd=sample, **_env(fake))
    assert result.returncode == 0, result.stderr
    assert "quantity >= BULK" in (sample / "pricing" / "cart.py").read_text()
    assert "only in memory" not in result.stdout


def test_a_change_left_only_in_memory_is_said_at_the_end(sample: Path):
    """A run that patched and did not persist says which modules changed only in memory
    and how to get the changes back (one that persisted does not: `test_yes_lets_...`)."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Fixed in memory."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix", "--mode", "auto-edit", cwd=sample, **_env(fake))
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "1 module(s) changed only in memory, not written to their files: pricing.cart" in said
    assert "`liveforge diff`" in said and "liveforge chat --resume 2" in said


def test_read_only_refuses_the_patch_with_a_message_the_model_can_act_on(sample: Path):
    """--mode read-only: inspecting works, the patch is refused and says how to allow it."""
    script = [
        reply.tool_call("view_source", {"path": "pricing.cart.Line.subtotal"}),
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("I may only look."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli(
            "run", "-p", "fix", "--json", "--mode", "read-only", cwd=sample, **_env(fake)
        )
        viewed = fake.requests[1].body["messages"][-1]["content"][0]
        refused = fake.requests[2].body["messages"][-1]["content"][0]
    assert result.returncode == 4  # the patch asked for was refused by the mode
    assert not viewed.get("is_error") and "subtotal" in str(viewed["content"])
    text = str(refused["content"])
    assert refused["is_error"] and "refused by 'read-only' mode" in text and "Do not retry" in text
    report = json.loads(result.stdout)
    assert report["patches"] == [] and report["mode"] == "read-only"


def test_ask_mode_refuses_a_patch_with_nobody_to_ask_and_yes_contradicting_mode_is_usage(
    sample: Path,
):
    """The default mode (ask) refuses a patch in a run without a person; `--yes --mode
    read-only` is a usage error."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Could not patch."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix", cwd=sample, **_env(fake))
        refused = fake.requests[1].body["messages"][-1]["content"][0]
        both = run_cli("run", "-p", "x", "--yes", "--mode", "read-only", cwd=sample, **_env(fake))
    assert result.returncode == 4 and "1 tool call(s) were refused (patch)" in result.stdout
    said = " ".join(result.stdout.split())
    assert "or `--yes`), or add an `allow` rule under [tool.liveforge.permissions]" in said
    assert "patch (memory) needs the user's approval in 'ask' mode" in str(refused["content"])
    assert both.returncode == 2 and "--yes means --mode full-auto" in both.stderr


SELF_PATCH = {
    "path": "liveforge.impls.agent_turn.add_note",
    "source": "def add_note(agent, text):\n    raise RuntimeError('never applied')\n",
}


def test_refused_calls_are_listed_in_the_json_report_with_exit_4(sample: Path):
    """In `ask` mode a refused patch, a refused self-patch (queued to the step's end) and a
    tool error each show in the report: refused calls under `refused` and `errors`, the
    failed one under `tool_errors`; nothing was changed, and the exit code is 4."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX})
        .tool_call("patch", SELF_PATCH)
        .tool_call("view_source", {"path": "pricing.no_such_module"}),
        reply.text("Fixed it."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix it", "--json", cwd=sample, **_env(fake))
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    assert result.returncode == 4 and data["ok"] is False and data["reason"] == "answer"
    assert data["error"]["type"] == "Refused" and data["error"]["exit_code"] == 4
    assert [(r["tool"], r["by"]) for r in data["refused"]] == [
        ("patch", "approval"),
        ("patch", "approval"),
    ]
    assert all("needs the user's approval" in r["reason"] for r in data["refused"])
    assert [e["tool"] for e in data["tool_errors"]] == ["view_source"]
    assert len(data["errors"]) == 2 and data["patches"] == [] and data["diff"] == ""


def test_a_deny_rule_refusal_exits_4_even_in_full_auto(sample: Path):
    """A call a deny rule refuses is reported as refused by the policy, not hidden by --yes."""
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.liveforge.permissions]\ndeny = ["patch"]\n'
    )
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Done."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix it", "--yes", "--json", cwd=sample, **_env(fake))
    data = json.loads(result.stdout)
    assert result.returncode == 4, result.stderr
    assert [(r["tool"], r["by"]) for r in data["refused"]] == [("patch", "policy")]
    message = data["error"]["message"]
    assert "a `deny` rule forbids patch" in message and "--yes" not in message


def test_a_command_outside_the_boundary_refused_under_yes_is_not_told_to_use_yes(
    sample: Path,
):
    """`exec` with boundary=false under --yes is refused (nobody to ask): the last line
    names the "unbounded" allow rule, not a mode `run` already has."""
    script = [
        reply.tool_call("exec", {"command": "echo hi", "boundary": False}),
        reply.text("Could not."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "run it", "--yes", cwd=sample, **_env(fake))
    assert result.returncode == 4, result.stderr
    said = " ".join(result.stdout.split())
    assert 'add an `allow` rule under [tool.liveforge.permissions] ("unbounded"' in said
    assert "give `run` a mode" not in said


def test_a_call_a_plugin_vetoes_is_said_to_be_the_plugin_s_doing(sample: Path):
    """A call a project plugin vetoes under --yes ends the run with exit 4 and a last line
    that names the plugin as the cause, not a mode to choose."""
    plugins = sample / ".liveforge" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "guard.py").write_text(
        "from liveforge.declarations.plugins import ToolVeto, hookimpl\n\n\n"
        "@hookimpl\ndef before_tool_call(name, arguments):\n"
        "    if name == 'execute':\n        return ToolVeto('use verify')\n"
    )
    script = [reply.tool_call("execute", {"code": "print(1)"}), reply.text("Done.")]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "run it", "--yes", cwd=sample, **_env(fake))
    assert result.returncode == 4, result.stderr
    said = " ".join(result.stdout.split())
    assert "a plugin vetoed execute" in said and "--yes" not in said


def test_provider_failure_ends_with_exit_1(sample: Path):
    """An authentication failure ends the turn with an error: exit 1, reason error."""
    with FakeProvider(script=[fault.auth()]) as fake:
        result = run_cli("run", "-p", "hello", "--json", cwd=sample, **_env(fake))
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    assert result.returncode == 1 and data["ok"] is False and data["reason"] == "error"
    assert data["errors"] and data["error"]["exit_code"] == 1
    assert data["error"]["message"] == "; ".join(data["errors"])


def test_text_answer_on_stdout_and_the_token_line_on_stderr(sample: Path):
    """Without --json, stdout carries the answer; the token count goes to stderr."""
    with FakeProvider(script=[reply.text("All good.")]) as fake:
        result = run_cli("run", "-p", "hello", cwd=sample, **_env(fake))
    assert result.returncode == 0, result.stderr
    assert "All good." in result.stdout and "tokens:" not in result.stdout
    assert "tokens:" in result.stderr


def test_a_check_the_model_runs_shows_its_value_in_the_run_output(sample: Path):
    """`run -p`: the model's verify call ends in one line with the snippet's value, as in
    chat (not only "the snippet ran to completion")."""
    code = "from pricing import Line\nLine('pen', 100, 10).subtotal()"
    script = [reply.tool_call("verify", {"code": code}), reply.text("It is 1000.")]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "--mode", "full-auto", "-p", "check", cwd=sample, **_env(fake))
    assert result.returncode == 0, result.stderr
    assert "✓ verify passed in" in result.stdout and "value 1000" in result.stdout


def test_no_provider_configured_names_what_to_set(sample: Path):
    """With no key in the environment: exit 2, naming ANTHROPIC_API_KEY and `liveforge demo`."""
    result = run_cli("run", "-p", "hello", cwd=sample)
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "liveforge demo" in result.stderr


def test_a_model_chosen_with_model_and_no_key_names_that_model_s_key(sample: Path):
    """`--model azure:dep` without its key: the error names AZURE_OPENAI_API_KEY and does not
    call the chosen model the default one."""
    result = run_cli("run", "-p", "hello", "--model", "azure:dep", cwd=sample)
    assert result.returncode == 2
    assert "set AZURE_OPENAI_API_KEY" in result.stderr and "Set that key" in result.stderr
    assert "default model" not in result.stderr


def test_a_run_that_cannot_start_prints_an_error_object_the_schema_accepts(sample: Path):
    """`--json run` without a key: exit 2 and one object, valid against schema.json, that
    holds the error and no run report."""
    result = run_cli("--json", "run", "-p", "x", cwd=sample)
    assert result.returncode == 2
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    assert data["ok"] is False and data["error"]["exit_code"] == 2
    assert "ANTHROPIC_API_KEY" in data["error"]["message"] and "reason" not in data
