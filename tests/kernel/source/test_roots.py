"""Import roots are read from the project's own configuration, the way its tools read it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from liveforge.kernel.source._roots import discover

CONFIGS = {
    "poetry": ('[tool.poetry]\npackages = [{include = "app", from = "lib"}]\n', "lib"),
    "pdm": ('[tool.pdm.build]\npackage-dir = "lib"\n', "lib"),
    "uv": ('[tool.uv.build-backend]\nmodule-root = "lib"\n', "lib"),
    "hatch-sources": ('[tool.hatch.build]\nsources = ["lib"]\n', "lib"),
    "setuptools-find": ('[tool.setuptools.packages.find]\nwhere = ["lib"]\n', "lib"),
}


@pytest.mark.parametrize("tool", sorted(CONFIGS))
def test_build_backend_settings_name_the_root(tmp_path: Path, tool: str) -> None:
    """Each build backend's package setting makes its folder an import root."""
    text, folder = CONFIGS[tool]
    (tmp_path / folder / "app").mkdir(parents=True)
    (tmp_path / folder / "app" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text(text)
    roots = discover(tmp_path)
    assert roots.paths == (tmp_path / folder, tmp_path)
    assert roots.module_name(tmp_path / folder / "app" / "__init__.py") == "app"
    assert [name for name, _ in roots.top_level()] == ["app"]


def test_pytest_ini_pythonpath_and_bad_toml(tmp_path: Path) -> None:
    """pytest.ini's pythonpath counts; an unreadable pyproject.toml is not fatal."""
    (tmp_path / "pyproject.toml").write_text("[tool.setuptools\nbroken")
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = code extra\n")
    (tmp_path / "code").mkdir()
    roots = discover(tmp_path)
    assert roots.paths == (tmp_path / "code", tmp_path)
    assert roots.reasons[str(tmp_path / "code")] == "pytest pythonpath"


def test_mapped_package_folder_has_one_name(tmp_path: Path) -> None:
    """A package-dir entry maps a folder to a package of another name; the folder is never
    a top-level package of its own."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = {"app.core" = "core_src"}\n'
    )
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "core_src").mkdir()
    (tmp_path / "core_src" / "__init__.py").write_text("")
    roots = discover(tmp_path)
    assert roots.module_name(tmp_path / "core_src" / "x.py") == "app.core.x"
    assert roots.mapped(tmp_path / "core_src" / "__init__.py") == "app.core"
    assert [name for name, _ in roots.top_level()] == ["app"]


def test_editable_install_is_asked_through_importlib(tmp_path: Path) -> None:
    """An editable install of the project (its .pth puts a folder on sys.path) is found from
    the distribution's direct_url.json and importlib's answer for its packages."""
    project = tmp_path / "project"
    (project / "code" / "edlf_app").mkdir(parents=True)
    (project / "code" / "edlf_app" / "__init__.py").write_text("")
    info = tmp_path / "site" / "edlf_app-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edlf-app\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("edlf_app\n")
    url = {"url": project.as_uri(), "dir_info": {"editable": True}}
    (info / "direct_url.json").write_text(json.dumps(url))
    sys.path[:0] = [str(tmp_path / "site"), str(project / "code")]
    try:
        roots = discover(project)
    finally:
        sys.path.remove(str(tmp_path / "site"))
        sys.path.remove(str(project / "code"))
    assert roots.paths == (project / "code", project)
    assert roots.reasons[str(project / "code")] == "editable install"
