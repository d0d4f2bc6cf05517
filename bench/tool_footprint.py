"""How much context liveforge's tool catalogue costs a model, and what it buys.

Prints the number of tools, the characters of all tool schemas (each ToolSpec as JSON with
the default separators, and compact as httpx 0.28 sends request bodies),
the size of `inspect_module("liveforge")` at its default depth with how many signatures and
implementation locations it carries, and the size of `view_source` on the agent declaration
(the Toolbox declaration stands in while no Agent declaration exists). The comparison figures
for mutagent 0.7.1 are the published ones: 6 tools, 2,550 characters of schemas, and a
1,791-character inspection of its own package with no signatures or implementation locations.

    python bench/tool_footprint.py
"""

from __future__ import annotations

import importlib.util
import json
import pkgutil
import re
from pathlib import Path

import liveforge.impls  # noqa: F401  (registers the default @impl bodies)
from liveforge.declarations.toolbox import Toolbox
from liveforge.kernel import Runtime

ROOT = Path(__file__).resolve().parent.parent
MUTAGENT = {
    "tools": 6,
    "schema_chars": 2550,
    "inspect_chars": 1791,
    "signatures": 0,
    "impl_locations": 0,
}


def _agent_target() -> tuple[str, str]:
    if importlib.util.find_spec("liveforge.declarations.agent") is not None:
        return "liveforge.declarations.agent.Agent", "Agent declaration"
    return "liveforge.declarations.toolbox.Toolbox", "Toolbox declaration (no Agent yet)"


def _signatures(text: str) -> int:
    return len(re.findall(r"^\s*(?:@\S+ )*(?:async )?\w+\(", text, re.M))


def _impls(text: str) -> int:
    return len(re.findall(r" (?:impl \S+:\d+|stub)\b", text))


def measure() -> dict[str, object]:
    """Run the catalogue through a real toolbox and collect the figures."""
    box = Toolbox(runtime=Runtime(project_root=ROOT), packages=["liveforge.tools"], limit=8000)
    specs = box.specs()
    schema_chars = sum(len(json.dumps(spec.model_dump())) for spec in specs)
    compact_chars = sum(len(json.dumps(spec.model_dump(), separators=(",", ":"))) for spec in specs)
    tree = box.call("inspect_module", {"path": "liveforge"}).text
    contracts = "".join(
        box.call("inspect_module", {"path": f"liveforge.declarations.{info.name}"}).text
        for info in pkgutil.iter_modules([str(ROOT / "declarations")])
    )
    target, label = _agent_target()
    source = box.call("view_source", {"path": target}).text
    return {
        "tools": len(specs),
        "names": [spec.name for spec in specs],
        "schema_chars": schema_chars,
        "compact_chars": compact_chars,
        "inspect_chars": len(tree),
        "signatures": _signatures(tree),
        "impl_locations": _impls(tree),
        "contracts_chars": len(contracts),
        "contracts_signatures": _signatures(contracts),
        "contracts_impls": _impls(contracts),
        "view_label": label,
        "view_chars": len(source),
        "view_target": target,
    }


def main() -> None:
    """Print the figures side by side with mutagent 0.7.1."""
    ours = measure()
    rows = [
        ("tools", "tools"),
        ("schema chars (all tools)", "schema_chars"),
        ("inspect_module(package) chars", "inspect_chars"),
        ("  signatures shown", "signatures"),
        ("  declared-method impl locations/stubs shown", "impl_locations"),
    ]
    print(f"{'figure':<46}{'liveforge':>11}{'mutagent 0.7.1':>16}{'ratio':>8}")
    for label, key in rows:
        mine, theirs = ours[key], MUTAGENT[key]
        assert isinstance(mine, int)
        ratio = f"{mine / theirs:.2f}" if theirs else "-"
        print(f"{label:<46}{mine:>11,}{theirs:>16,}{ratio:>8}")
    per_tool = int(ours["schema_chars"]) / int(ours["tools"])  # type: ignore[call-overload]
    print(
        f"{'schema chars per tool':<46}{per_tool:>11.0f}{2550 / 6:>16.0f}"
        f"{per_tool / (2550 / 6):>8.2f}"
    )
    print(f"\nschema chars as compact JSON (httpx 0.28 request bodies): {ours['compact_chars']:,}")
    print(
        f"inspect_module(<each declarations module>), summed: {ours['contracts_chars']:,} "
        f"chars, {ours['contracts_signatures']} signatures, "
        f"{ours['contracts_impls']} impl locations/stubs"
    )
    print(
        f"view_source({ours['view_target']}) [{ours['view_label']}]: {ours['view_chars']:,} chars"
    )
    print("tools: " + ", ".join(ours["names"]))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
