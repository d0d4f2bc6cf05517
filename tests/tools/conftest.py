"""A real fixture project on disk for the tool tests: a package with modules, a forwardpy
declaration and its impl, a tools package, and pytest tests of its own."""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_counter = itertools.count()

FILES = {
    "__init__.py": '"""A fixture project."""\n',
    "shapes.py": '''
        """Geometry helpers."""

        import math

        UNIT = 1.0


        def area(radius: float, *, precise: bool = False) -> float:
            """Area of a circle."""
            return math.pi * radius ** 2 if precise else 3.14 * radius ** 2


        def _hidden() -> None:
            pass


        class Square:
            """A square."""

            def __init__(self, side: float) -> None:
                self.side = side

            def area(self) -> float:
                return self.side ** 2

            @property
            def perimeter(self) -> float:
                return 4 * self.side

            @classmethod
            def unit(cls) -> "Square":
                return cls(UNIT)
        ''',
    "user.py": '''
        """Uses the shapes."""

        from {pkg}.shapes import Square, area


        def total(sides: list[float]) -> float:
            return sum(Square(s).area() for s in sides) + area(1.0)
        ''',
    "contracts.py": '''
        """Declarations."""

        import forwardpy


        class Greeter(forwardpy.Object):
            """Says things."""

            name: str

            def greet(self, loud: bool = False) -> str:
                """Greet someone."""
                ...

            def part(self, n: int) -> str:
                """Declared but not implemented."""
                ...
        ''',
    "bodies.py": '''
        """Implementations."""

        import forwardpy

        from {pkg}.contracts import Greeter


        @forwardpy.impl(Greeter.greet)
        def greet(self: Greeter, loud: bool = False) -> str:
            text = "hello " + self.name
            return text.upper() if loud else text
        ''',
    "later/__init__.py": '"""A subpackage nobody imported yet."""\n',
    "later/deep.py": '''
        """Not imported by anything."""


        def lazy(x: int) -> int:
            return x + 1
        ''',
    "tools/__init__.py": '"""The project\'s own tools."""\n',
    "tools/mathtools.py": '''
        """Arithmetic tools."""

        __all__ = ["add"]


        def add(a: int, b: int = 1) -> str:
            """Add two integers.

            Args:
                a: first addend
                b: second addend
            """
            return str(a + b)


        def not_a_tool() -> str:
            return "hidden"
        ''',
    "tools/_private.py": """
        __all__ = ["secret"]


        def secret() -> str:
            return "never listed"
        """,
}

TESTS = {
    "tests/test_shapes.py": """
        from {pkg}.shapes import area


        def test_area_positive():
            assert area(1.0) > 3


        def test_area_fails_on_purpose():
            assert area(0.0) == 1
        """,
}


@dataclass
class Project:
    """A fixture project: its root on sys.path and its top-level package name."""

    root: Path
    pkg: str

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative.replace("{pkg}", self.pkg)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip().replace("{pkg}", self.pkg))
        return path


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """A fresh fixture package under a unique name, importable for the test's duration."""
    pkg = f"fixproj{next(_counter)}_{tmp_path.name[-6:].replace('-', '_')}"
    proj = Project(tmp_path, pkg)
    for relative, text in FILES.items():
        proj.write(f"{pkg}/{relative}", text)
    for relative, text in TESTS.items():
        proj.write(relative, text)
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "{pkg}"\nversion = "0"\n')
    sys.path.insert(0, str(tmp_path))
    try:
        yield proj
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
            del sys.modules[name]
