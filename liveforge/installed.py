"""Where the running liveforge came from, and the pip command that installs that same one.

liveforge is not published on a package index, so advice such as `pip install liveforge`
would send a user nowhere. The command is computed from the running copy instead:

    a source checkout (editable install, or on sys.path)   pip install -e CHECKOUT
    installed from a folder (PEP 610 `dir_info`)            pip install FOLDER
    installed from a wheel or sdist (`archive_info`)        pip install "liveforge @ URL"
    installed from version control (`vcs_info`)             pip install "liveforge @ git+URL@COMMIT"
    installed from an index (no direct URL recorded)        pip install liveforge

Example::

    >>> pip_install("mcp")                                   # doctest: +SKIP
    "pip install -e '/home/me/src/liveforge[mcp]'"
"""

from __future__ import annotations

import json
import shlex
import tomllib
import urllib.parse
import urllib.request
from importlib import metadata
from pathlib import Path
from typing import Any

import liveforge

__all__ = ["checkout", "pip_install", "requirement"]


def checkout() -> Path | None:
    """The source folder the running liveforge is imported from, when it is a checkout
    (its pyproject.toml names the project liveforge), else None."""
    folder = Path(liveforge.__file__).resolve().parent.parent
    try:
        project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    return folder if project.get("project", {}).get("name") == "liveforge" else None


def requirement(extra: str = "") -> list[str]:
    """The arguments of `pip install` that install the running liveforge (with `extra`)."""
    name = f"liveforge[{extra}]" if extra else "liveforge"
    suffix = f"[{extra}]" if extra else ""
    source = checkout()
    if source is not None:
        return ["-e", f"{source}{suffix}"]
    origin = _direct_url()
    url = origin.get("url", "")
    if "dir_info" in origin and url.startswith("file:"):
        folder = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
        editable = ["-e"] if origin["dir_info"].get("editable") else []
        return [*editable, f"{folder}{suffix}"]
    if "vcs_info" in origin:
        vcs = origin["vcs_info"]
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return [f"{name} @ {vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")]
    if url:
        return [f"{name} @ {url}"]
    return [name]


def pip_install(extra: str = "", *, python: str | Path | None = None, uv: bool = False) -> str:
    """The shell command that installs the running liveforge (with `extra`): `pip install`,
    `PYTHON -m pip install` for the interpreter `python`, or with `uv` set
    `uv pip install --python PYTHON`."""
    if uv:
        pip = "uv pip install" + (f" --python {shlex.quote(str(python))}" if python else "")
    else:
        pip = (f"{shlex.quote(str(python))} -m pip" if python else "pip") + " install"
    return f"{pip} " + " ".join(shlex.quote(arg) for arg in requirement(extra))


def _direct_url() -> dict[str, Any]:
    """The PEP 610 record of how the distribution holding the running liveforge was
    obtained; {} when none is recorded (installed from an index)."""
    here = Path(liveforge.__file__).resolve()
    for dist in metadata.distributions(name="liveforge"):
        if Path(str(dist.locate_file("liveforge/__init__.py"))).resolve() != here:
            continue
        try:
            found = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}
    return {}
