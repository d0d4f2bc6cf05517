"""One gateway, several projects: each its own worker and live program, addressed by name."""

from __future__ import annotations

import shutil
from pathlib import Path

from gateway_support import FIX, Client, GatewayProcess, ended, gateway_env

from liveforge.testing import reply


def test_two_projects_with_the_same_package_name_never_meet(sample: Path, tmp_path, fake):
    """Two copies of a project (both have `pricing`) behind one gateway: a patch in one is
    absent from the other, sessions of the same name are separate, events name their
    project, and a request that names no project is refused with the names to choose from."""
    other = tmp_path / "copy"
    shutil.copytree(sample, other)
    fake.add(
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("patched the shop"),
        reply.text("the copy is untouched"),
    )
    gateway = GatewayProcess([f"shop={sample}", str(other)], gateway_env(fake))
    try:
        client = Client(gateway.ws_url)
        names = [p["project"] for p in client.hello["result"]["projects"]]
        assert names == ["shop", "copy"] and "project" not in client.hello["result"]
        refused = client.request("run", session="main", input="hi")
        assert not refused["ok"] and "shop, copy" in refused["error"]["message"]
        unknown = client.request("sessions.list", project="nope")
        assert "no project 'nope'" in unknown["error"]["message"]

        run = client.request("run", project="shop", session="main", input="fix")["result"]["run"]
        shop = client.until(ended(run))
        assert {m["project"] for m in shop if m["type"] != "result"} == {"shop"}
        copy_run = client.request("run", project="copy", session="main", input="look")
        copied = client.until(ended(copy_run["result"]["run"]))
        assert copied[-1]["status"] == "done" and copied[-1]["project"] == "copy"

        shop_diff = client.request("changes.diff", project="shop")["result"]["diff"]
        assert "BULK_QUANTITY" in shop_diff
        assert client.request("changes.diff", project="copy")["result"]["diff"] == ""
        for project in ("shop", "copy"):
            listed = client.request("sessions.list", project=project)["result"]["sessions"]
            assert [s["session"] for s in listed] == ["main"]
            history = client.request("sessions.history", project=project, session="main")
            assert len(history["result"]["messages"]) >= 2
        health = client.request("health")["result"]
        workers = {h["project"]: (h["worker"], h["path"]) for h in health["projects"]}
        assert workers == {"shop": (True, str(sample)), "copy": (True, str(other))}
        assert (sample / ".liveforge" / "gateway.db").exists()
        assert (other / ".liveforge" / "gateway.db").exists()
        client.close()
    finally:
        gateway.stop()


def test_a_single_project_gateway_needs_no_project_field(sample: Path, fake):
    """With one project, requests without `project` work as before and naming it works too."""
    fake.add(reply.text("hello"))
    gateway = GatewayProcess(sample, gateway_env(fake))
    try:
        client = Client(gateway.ws_url)
        assert client.hello["result"]["project"] == str(sample)
        run = client.request("run", project="shop", session="main", input="hi")["result"]["run"]
        assert client.until(ended(run))[-1]["status"] == "done"
        assert client.request("projects.list")["result"]["projects"] == [
            {"project": "shop", "path": str(sample), "model": "anthropic:test-model"}
        ]
        assert client.request("health")["result"]["project"] == "shop"
        client.close()
    finally:
        gateway.stop()


def test_two_projects_of_the_same_folder_name_are_refused_with_the_fix(sample, tmp_path):
    """`--project a/shop --project b/shop` is a usage error that says how to name one."""
    import subprocess
    import sys

    twin = tmp_path / "b" / "shop"
    shutil.copytree(sample, twin)
    both = ["--project", str(sample), "--project", str(twin)]
    done = subprocess.run(
        [sys.executable, "-m", "liveforge", "serve", *both, "--port", "0"],
        capture_output=True,
        text=True,
        env=gateway_env(None),
        timeout=60,
    )
    assert done.returncode == 2
    assert "two projects are named 'shop'" in done.stderr and "--project OTHER=" in done.stderr
