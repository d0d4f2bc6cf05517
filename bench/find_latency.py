"""How fast `find` and `inspect_module` answer on a project the size of more-itertools.

Generates a src-layout project of about 20,000 lines (a package of 40 modules with functions,
classes and methods, a package `__init__` that re-exports names, and stub files), then
measures side by side in one run:

- `grep -rn NAME` over the same files (a plain text search, process start included);
- `find(NAME)`: cold (first call of a new runtime: the definition index is built) and warm;
- jedi's project search, which `find` used before the index, cold and warm;
- `inspect_module(top package)`, cold and warm;
- `references` of a re-exported function (the index picks the files that mention it), cold
  and warm, and jedi's project-wide references search, which it used before;
- how many sources the index build parsed, against the number of files.

    python bench/find_latency.py [--lines 20000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import jedi

from liveforge.kernel import Runtime
from liveforge.tools import using_runtime
from liveforge.tools._index import definition_index
from liveforge.tools._jedi import memory_sources
from liveforge.tools._outline import _cached_outline, parsed
from liveforge.tools.inspection import inspect_module
from liveforge.tools.intel import find, references

PACKAGE = "benchpkg"
NEEDLE = "window_17_3"  # defined once, in module m17
TARGET = f"{PACKAGE}.m0.window_0_0"  # re-exported by the package, shadowed by a stub


def _module(number: int, blocks: int) -> str:
    parts = [f'"""Generated module {number}."""\n\nfrom __future__ import annotations\n\n']
    for block in range(blocks):
        parts.append(
            textwrap.dedent(
                f'''
                def window_{number}_{block}(items: list[int], size: int = 3) -> list[int]:
                    """Sliding sums of {{size}} items."""
                    out = []
                    for start in range(len(items) - size + 1):
                        out.append(sum(items[start : start + size]))
                    return out


                class Chunker{number}_{block}:
                    """Cuts sequences into chunks."""

                    limit: int = 10

                    def __init__(self, size: int) -> None:
                        self.size = size

                    def chunks(self, items: list[int]) -> list[list[int]]:
                        return [items[i : i + self.size] for i in range(0, len(items), self.size)]

                    @property
                    def doubled(self) -> int:
                        return self.size * 2
                '''
            )
        )
    return "".join(parts)


def make_project(root: Path, lines: int) -> list[Path]:
    """A src-layout project of about `lines` lines; returns its Python files."""
    package = root / "src" / PACKAGE
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{PACKAGE}"\nversion = "0"\n')
    modules = 40
    blocks = max(1, lines // (modules * 24))
    exports = [f"from .m{n} import window_{n}_0" for n in range(modules)]
    (package / "__init__.py").write_text(
        '"""A generated package."""\n\n' + "\n".join(exports) + "\n"
    )
    for number in range(modules):
        (package / f"m{number}.py").write_text(_module(number, blocks))
    (package / "m0.pyi").write_text(
        "def window_0_0(items: list[int], size: int = ...) -> list[int]: ...\n"
    )
    (package / "_native.pyi").write_text("def fast_window(items: bytes) -> bytes: ...\n")
    return sorted(package.glob("*.py"))


def _median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _once_ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = make_project(root, args.lines)
        total = sum(len(f.read_text().splitlines()) for f in files)
        grep = ["grep", "-rn", NEEDLE, str(root / "src")]
        grep_ms = _median_ms(lambda: subprocess.run(grep, capture_output=True), args.repeat)
        rt = Runtime(project_root=root)
        with using_runtime(rt):
            _cached_outline.cache_clear()
            parsed.cache_clear()
            find_cold = _once_ms(lambda: find(NEEDLE))
            index = definition_index(rt, memory_sources(rt))
            parses = parsed.cache_info().misses
            find_warm = _median_ms(lambda: find(NEEDLE), args.repeat)
            inspect_cold = _once_ms(lambda: inspect_module(PACKAGE))
            inspect_warm = _median_ms(lambda: inspect_module(PACKAGE), args.repeat)
            refs_cold = _once_ms(lambda: references(TARGET))
            refs_warm = _median_ms(lambda: references(TARGET), 3)
            answer = find(NEEDLE)
        project = jedi.Project(root, sys_path=[str(root / "src"), *sys.path], smart_sys_path=False)
        jedi_cold = _once_ms(lambda: list(project.search(NEEDLE, all_scopes=True)))
        jedi_warm = _median_ms(lambda: list(project.search(NEEDLE, all_scopes=True)), 3)
        script = jedi.Script(path=files[1], project=project)
        jedi_refs = _once_ms(lambda: script.get_references(6, 4, scope="project"))
        rt.close()
    rows = [
        ("grep -rn (text search)", grep_ms, "", ""),
        (
            "find, warm",
            find_warm,
            "<= 50 ms, <= 5x grep",
            _ok(find_warm <= 50 and find_warm <= 5 * grep_ms),
        ),
        ("find, cold (index built)", find_cold, "<= 1500 ms", _ok(find_cold <= 1500)),
        ("jedi project search, warm", jedi_warm, "(find before the index)", ""),
        ("jedi project search, cold", jedi_cold, "", ""),
        ("inspect_module(top package), warm", inspect_warm, "<= 200 ms", _ok(inspect_warm <= 200)),
        ("inspect_module(top package), cold", inspect_cold, "", ""),
        ("references, warm (index filter)", refs_warm, "", ""),
        ("references, cold", refs_cold, "", ""),
        ("jedi project references, cold", jedi_refs, "(references before)", ""),
    ]
    print(f"fixture: {len(files)} files, {total:,} lines (src/ layout, re-exports, 2 stubs)\n")
    print(f"{'measure':<36}{'ms':>10}{'x grep':>9}  {'target':<24}{'met':>4}")
    for label, ms, target, met in rows:
        print(f"{label:<36}{ms:>10.1f}{ms / grep_ms:>9.1f}  {target:<24}{met:>4}")
    sources = len(files) + 2
    print(
        f"\nindex build: {parses} sources parsed for {sources} files (.py and .pyi); "
        f"at most once each: {_ok(parses <= sources)}; last refresh parsed {index.parsed_last}"
    )
    print(f"find({NEEDLE!r}) -> {answer.strip()}")


def _ok(met: bool) -> str:
    return "yes" if met else "NO"


if __name__ == "__main__":
    main()
