"""One-shot commands: each `--json` output parses, with stable keys and honest exit codes."""

from __future__ import annotations

import json
import shlex
from importlib import resources
from pathlib import Path

import jsonschema
from cli_support import FIX, run_cli

from liveforge.cli.checks.checking import EXAMPLES_VERIFY

SCHEMA = json.loads((resources.files("liveforge.cli") / "schema.json").read_text())


def _json(result) -> dict:
    """The command's one JSON object, checked against the schema shipped in the package."""
    assert result.stdout.strip(), result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def _walk(node: dict):
    yield node
    for child in node["children"]:
        yield from _walk(child)


def test_inspect_json_lists_the_project_tree(sample: Path):
    """`inspect --json` reports ok and the tree of the project's package."""
    result = run_cli("inspect", "pricing", "--depth", "3", "--json", cwd=sample)
    data = _json(result)
    assert result.returncode == 0
    assert data["ok"] is True and data["command"] == "inspect"
    assert data["project"] == str(sample.resolve())
    nodes = {n["path"]: n for n in _walk(data["tree"])}
    assert nodes["pricing"]["kind"] == "package"
    assert nodes["pricing.cart"]["kind"] == "module"
    line = nodes["pricing.cart.Line"]
    assert line["kind"] == "class" and line["file"].endswith("pricing/cart.py")
    subtotal = nodes["pricing.cart.Line.subtotal"]
    assert subtotal["kind"] == "method" and subtotal["signature"] == "() -> int"
    assert subtotal["line"] > line["line"] and subtotal["changed"] is False


def test_view_json_shows_numbered_source(sample: Path):
    """`view --json` returns the line-numbered source of one method."""
    data = _json(run_cli("view", "pricing.cart.Line.subtotal", "--json", cwd=sample))
    source = data["source"]
    assert data["ok"] is True and source["origin"] == "file"
    assert source["lines"][0] == {
        "number": source["start"],
        "text": "    def subtotal(self) -> int:",
        "origin": "file",
    }
    texts = [line["text"].strip() for line in source["lines"]]
    assert "if self.quantity > BULK_QUANTITY:" in texts
    assert [line["number"] for line in source["lines"]] == list(
        range(source["start"], source["end"] + 1)
    )


def test_view_of_unknown_target_fails_with_exit_3_and_json_error(sample: Path):
    """An unknown dotted path is an operation failure: exit 3 and an error object."""
    result = run_cli("view", "pricing.cart.Nope", "--json", cwd=sample)
    data = _json(result)
    assert result.returncode == 3
    assert data["ok"] is False and "Nope" in data["error"]["message"]


def test_json_errors_name_the_project_and_say_what_the_text_says(sample: Path):
    """A failing --json command names its project like a passing one, and its message is
    the text mode's, close matches included."""
    for command in ("view", "inspect"):
        text = run_cli(command, "pricing.cart.Line.subtotl", cwd=sample)
        data = _json(run_cli(command, "pricing.cart.Line.subtotl", "--json", cwd=sample))
        assert data["project"] == str(sample.resolve())
        message = data["error"]["message"]
        assert "close matches: pricing.cart.Line.subtotal" in message
        assert message in text.stderr


def test_find_json_locates_a_definition(sample: Path):
    """`find --json` finds the coupon parser by name."""
    data = _json(
        run_cli("find", "parse_coupon", "--json", "--project", str(sample), cwd=sample.parent)
    )
    assert data["ok"] is True and data["query"] == "parse_coupon"
    (hit,) = data["hits"]
    assert hit["path"] == "pricing.coupons.parse_coupon" and hit["kind"] == "def"
    assert hit["file"].endswith("pricing/coupons.py") and hit["line"] > 0


def test_verify_json_with_patch_passes_and_exit_0(sample: Path):
    """`verify --patch T=FILE -c CODE` checks the patched code in the sandbox."""
    (sample.parent / "fix.py").write_text(FIX)
    code = "from pricing import Line\nassert Line('pen', 100, 10).subtotal() == 900"
    result = run_cli(
        "verify",
        "--patch",
        f"pricing.cart.Line.subtotal={sample.parent}/fix.py",
        "-c",
        code,
        "--json",
        cwd=sample,
    )
    data = _json(result)
    assert result.returncode == 0, data
    assert data["run"]["status"] == "passed" and data["patches"][0]["change_id"]
    assert data["run"]["live"]["status"] == "passed" and data["run"]["divergent"] is False
    assert "if self.quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_verify_without_patch_fails_with_exit_1(sample: Path):
    """The unpatched bug makes the same check fail: exit 1, status failed."""
    code = "from pricing import Line\nassert Line('pen', 100, 10).subtotal() == 900"
    result = run_cli("verify", "-c", code, "--json", cwd=sample)
    data = _json(result)
    assert result.returncode == 1
    assert data["ok"] is False and data["run"]["exc_type"] == "AssertionError"


def test_verify_takes_the_code_as_its_argument_like_chat_verify(sample: Path):
    """`liveforge verify CODE` (as `/verify CODE` in chat) runs CODE and shows its value."""
    code = "from pricing import Line; Line('pen', 100, 10).subtotal()"
    result = run_cli("verify", code, cwd=sample)
    assert result.returncode == 0, result.stderr
    assert "value: 1000" in result.stdout


def test_test_json_counts_failures_then_passes_with_patch(sample: Path):
    """`test` reports the bug's failing tests, with pytest's exit code; with the fix
    patched in, all pass."""
    failing = run_cli("test", "--json", "--", "-q", cwd=sample)
    assert failing.returncode == 1
    run = _json(failing)["run"]
    assert run["tests"]["failed"] == 2 and run["exit_code"] == 1  # pytest's exit code
    (sample.parent / "fix.py").write_text(FIX)
    passing = run_cli(
        "test",
        "--patch",
        f"pricing.cart.Line.subtotal={sample.parent}/fix.py",
        "--json",
        "--",
        "-q",
        cwd=sample,
    )
    data = _json(passing)
    assert passing.returncode == 0 and data["run"]["tests"]["passed"] == 5
    assert data["run"]["exit_code"] == 0


def test_runs_json_lists_and_shows_records(sample: Path):
    """`runs --json` lists the recorded runs; `runs ID --json` shows one."""
    run_cli("verify", "-c", "6 * 7", cwd=sample)
    listing = _json(run_cli("runs", "--json", cwd=sample))
    assert listing["ok"] is True and len(listing["runs"]) == 1
    run_id = listing["runs"][0]["run_id"]
    one = _json(run_cli("runs", run_id, "--json", cwd=sample))
    assert one["run"]["run_id"] == run_id and one["run"]["value_repr"] == "42"


def test_bad_patch_spec_is_a_usage_error(sample: Path):
    """A --patch without TARGET=FILE exits 2 and says the expected form."""
    result = run_cli(
        "verify", "--patch", "pricing.cart.Line.subtotal", "-c", "1", "--json", cwd=sample
    )
    assert result.returncode == 2
    assert "TARGET=FILE" in _json(result)["error"]["message"]


def test_missing_project_dir_is_a_usage_error(tmp_path: Path):
    """--project naming no directory exits 2 with a message naming it."""
    result = run_cli("inspect", "--project", str(tmp_path / "missing"), cwd=tmp_path)
    assert result.returncode == 2 and "missing" in result.stderr


def test_verify_reads_code_from_stdin(sample: Path):
    """Without -c and without patches, verify runs the code piped on stdin."""
    result = run_cli(
        "verify",
        "--json",
        cwd=sample,
        input="from pricing import Line\nLine('pen', 150, 3).subtotal()\n",
    )
    data = _json(result)
    assert result.returncode == 0 and data["run"]["value_repr"] == "450"


def test_view_human_output_is_the_numbered_source(sample: Path):
    """Without --json, view prints the tool's numbered source as plain text."""
    result = run_cli("view", "pricing.coupons.Coupon.apply", cwd=sample)
    assert result.returncode == 0
    assert "def apply(self, total_cents: int) -> int:" in result.stdout
    assert not result.stdout.lstrip().startswith("{")


CONTRACTS = '''"""Declarations."""

import forwardpy


class Greeter(forwardpy.Object):
    """Says things."""

    name: str

    def greet(self, loud: bool = False) -> str:
        """Greet someone."""
        ...

    def part(self, n: int) -> str:
        """Declared, never implemented."""
        ...
'''

BODIES = '''"""Implementations."""

import forwardpy

from greet.contracts import Greeter


@forwardpy.impl(Greeter.greet)
def greet(self: Greeter, loud: bool = False) -> str:
    return "hello " + self.name
'''

LOUDER = BODIES.replace(
    "\n\n@forwardpy.impl",
    '\n\ndef shout(text: str) -> str:\n    return text.upper() + "!"\n\n\n@forwardpy.impl',
).replace('return "hello " + self.name', 'return shout("hello " + self.name) if loud else "hi"')
"""The bodies module as patched in memory: its @impl moves from line 8 to line 12."""


def _declared(root: Path) -> Path:
    """A project with a forwardpy declaration, its @impl body, and a new version of the body."""
    (root / "greet").mkdir(parents=True)
    (root / "greet" / "__init__.py").write_text('"""Greetings."""\n')
    (root / "greet" / "contracts.py").write_text(CONTRACTS)
    (root / "greet" / "bodies.py").write_text(BODIES)
    (root / "louder.py").write_text(LOUDER)
    return root


def test_inspect_json_gives_the_active_impl_of_declared_methods(tmp_path: Path):
    """With the bodies patched in memory, each declared method names where its active @impl
    is (module and line, in memory) or that it is a stub; the file stays as it was."""
    root = _declared(tmp_path / "proj")
    result = run_cli(
        "inspect", "greet.contracts.Greeter", "--patch", "greet.bodies=louder.py", "--json",
        cwd=root,
    )  # fmt: skip
    data = _json(result)
    assert result.returncode == 0 and [p["target"] for p in data["patches"]] == ["greet.bodies"]
    nodes = {n["path"]: n for n in _walk(data["tree"])}
    assert nodes["greet.contracts.Greeter.greet"]["impl"] == {
        "stub": False,
        "module": "greet.bodies",
        "line": 12,
    }
    assert nodes["greet.contracts.Greeter.part"]["impl"] == {
        "stub": True,
        "module": None,
        "line": None,
    }
    assert nodes["greet.contracts.Greeter"]["impl"] is None  # a class is not a declared method
    assert (root / "greet" / "bodies.py").read_text() == BODIES


def test_view_json_of_a_patched_target_comes_from_memory(tmp_path: Path):
    """`view --patch` shows the in-memory lines with their numbers in the patched module,
    each line with its own `origin`: "memory" for the lines the patch made, "file" for the
    ones the file has too; without the patch the same path is the file's."""
    root = _declared(tmp_path / "proj")
    args = ["view", "greet.bodies.greet", "--json"]
    patched = _json(run_cli(*args, "--patch", "greet.bodies=louder.py", cwd=root))["source"]
    assert (patched["origin"], patched["state"], patched["start"]) == ("memory", "changed", 12)
    assert [(line["number"], line["origin"]) for line in patched["lines"]] == [
        (12, "file"),
        (13, "file"),
        (14, "memory"),
    ]
    assert patched["lines"][0]["text"] == "@forwardpy.impl(Greeter.greet)"
    assert "shout(" in patched["lines"][-1]["text"]
    module = _json(run_cli("view", "greet.bodies", "--json", "--patch", "greet.bodies=louder.py",
                           cwd=root))["source"]  # fmt: skip
    made = [line["text"] for line in module["lines"] if line["origin"] == "memory"]
    assert made == ["def shout(text: str) -> str:", '    return text.upper() + "!"', "", "",
                    '    return shout("hello " + self.name) if loud else "hi"']  # fmt: skip
    on_disk = _json(run_cli(*args, cwd=root))["source"]
    assert (on_disk["origin"], on_disk["start"]) == ("file", 8)
    assert on_disk["lines"][-1]["text"] == '    return "hello " + self.name'
    assert {line["origin"] for line in on_disk["lines"]} == {"file"}


def test_view_text_with_a_patch_says_what_was_patched(tmp_path: Path):
    """Without --json, `view --patch` names the change, then the numbered patched source."""
    root = _declared(tmp_path / "proj")
    result = run_cli("view", "greet.bodies.shout", "--patch", "greet.bodies=louder.py", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("patched c1 module greet.bodies")
    assert '\n9     return text.upper() + "!"\n' in result.stdout


def test_find_sees_names_a_package_re_exports_with_a_star(tmp_path: Path):
    """`from .functoolz import *` re-exports what functoolz.__all__ lists (or, without a
    literal __all__, its public names): find answers for toolkit.add as view does."""
    (tmp_path / "toolkit").mkdir()
    (tmp_path / "toolkit" / "__init__.py").write_text(
        "from .functoolz import *\nfrom .more import *\n"
    )
    (tmp_path / "toolkit" / "functoolz.py").write_text(
        "__all__ = ['add']\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
        "    return a - b\n"
    )
    (tmp_path / "toolkit" / "more.py").write_text("def mul(a, b):\n    return a * b\n")
    text = run_cli("find", "toolkit.add", cwd=tmp_path)
    assert text.stdout == "def toolkit.functoolz.add(a, b) :4 (exported as toolkit.add)\n"
    data = _json(run_cli("--json", "find", "mul", cwd=tmp_path))
    assert [(h["path"], h["exported_as"]) for h in data["hits"]] == [
        ("toolkit.more.mul", ["toolkit.mul"])
    ]
    assert "no definitions" in run_cli("find", "toolkit.sub", cwd=tmp_path).stdout
    assert "return a + b" in run_cli("view", "toolkit.add", cwd=tmp_path).stdout


def test_a_divergent_verify_says_which_values_differ(sample: Path):
    """Both runs pass with different values: the message says so and names both values."""
    (sample.parent / "fix.py").write_text(FIX)
    result = run_cli(
        "verify",
        "--patch",
        f"pricing.cart.Line.subtotal={sample.parent}/fix.py",
        "-c",
        "import sys; 'pricing.cart' in sys.modules",
        "--json",
        cwd=sample,
    )
    run = _json(result)["run"]
    assert result.returncode == 1 and run["divergent"] is True
    assert (
        "both passed, with different values: fresh import False, live process True"
        in (run["message"])
    )


def test_the_examples_of_verify_s_help_pass_in_the_demo_s_sample(sample: Path):
    """Each example line `liveforge verify --help` shows runs and passes in the sample project
    the examples name (with `fix.py` holding the corrected method)."""
    (sample / "fix.py").write_text(FIX)
    for line in EXAMPLES_VERIFY.splitlines():
        stdin, _, command = line.strip().rpartition("| ")
        words = shlex.split(command)
        assert words[:2] == ["liveforge", "verify"], line
        given = shlex.split(stdin)[1] if stdin else None
        result = run_cli(*words[1:], cwd=sample, input=given)
        assert result.returncode == 0, f"{line}\n{result.stdout}{result.stderr}"
