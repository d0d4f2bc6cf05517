"""Advice to install liveforge names the copy that is running — a checkout, a folder or a
wheel — never a package index liveforge is not published on."""

from __future__ import annotations

import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from cli_support import cli_env, make_venv, pip_install

import liveforge

CHECKOUT = Path(liveforge.__file__).resolve().parent.parent
WITHOUT_MCP = (
    "import sys; sys.modules['mcp'] = None; from liveforge.__main__ import main; "
    "sys.exit(main(['mcp']))"
)


def _venv(prefix: Path) -> Path:
    """A real virtualenv without liveforge; liveforge's dependencies are reachable there."""
    return make_venv(prefix, [sysconfig.get_paths()["purelib"]])


def _without_mcp(python: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`liveforge mcp` run by `python` with the MCP SDK made unimportable."""
    return subprocess.run(
        [str(python), "-c", WITHOUT_MCP],
        cwd=cwd,
        stdin=subprocess.DEVNULL,  # `mcp` serves stdio: never the test worker's own stdin
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )


@pytest.fixture
def source(checkout_copy: Path) -> Path:
    """A copy of the source tree (building in place would leave build/ in the checkout)."""
    return checkout_copy


def test_a_checkout_is_installed_editable_from_its_folder(tmp_path: Path):
    """Run from a checkout, the missing-SDK message of `liveforge mcp` installs the extra
    from that checkout with `pip install -e`."""
    result = _without_mcp(Path(sys.executable), tmp_path)
    assert result.returncode == 2, result.stderr
    expected = f"{sys.executable} -m pip install -e {shlex.quote(f'{CHECKOUT}[mcp]')}"
    assert expected in result.stderr
    assert 'liveforge[mcp]"' not in result.stderr and "install liveforge" not in result.stderr


def test_an_mcp_server_without_the_sdk_points_to_the_command_that_names_the_install(
    tmp_path: Path,
):
    """`liveforge mcp list` without the MCP SDK reports the configured server as failed,
    pointing to `liveforge mcp` for the install command, never to a package index."""
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"t": {"command": "true"}}}')
    code = WITHOUT_MCP.replace("main(['mcp'])", "main(['mcp', 'list'])")
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    said = result.stdout + result.stderr
    assert result.returncode == 1, said
    assert "the MCP SDK is not installed" in said and "`liveforge mcp` prints the command" in said
    assert "pip install 'liveforge[mcp]'" not in said


def test_a_copy_installed_from_a_folder_names_that_folder(tmp_path: Path, source: Path):
    """Installed (not editable) from a folder, liveforge's advice installs that folder."""
    python = _venv(tmp_path / "env")
    pip_install(python, str(source))
    result = _without_mcp(python, tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"-m pip install {shlex.quote(f'{source}[mcp]')}" in result.stderr
    assert "-e " not in result.stderr


def test_a_copy_installed_from_a_wheel_names_that_wheel(tmp_path: Path, source: Path):
    """Installed from a wheel file, the advice installs the same wheel, extras included."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("liveforge-*.whl")
    python = _venv(tmp_path / "env")
    pip_install(python, str(wheel))
    result = _without_mcp(python, tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"-m pip install 'liveforge[mcp] @ {wheel.as_uri()}'" in result.stderr
