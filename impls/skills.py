"""`SkillLibrary` bodies: find skill files, read their front matter, resolve precedence.

Front matter is YAML (parsed with PyYAML's safe loader) holding text values; a file whose
front matter is not valid YAML is reported by `problems()`, naming the file and the line,
rather than guessed at. Files are read afresh on every call: there
are few, and an edited skill is then seen at once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import forwardpy
import yaml

from liveforge.declarations.skills import Skill, SkillLibrary, SkillNotFound, SkillSource

__all__ = ["BUNDLED_DIR", "parse_skill", "user_skill_dir"]

BUNDLED_DIR = Path(__file__).resolve().parent / "bundled_skills"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_INDEX_LINE = 240


class _BadSkill(ValueError):
    """A skill file that cannot be used; the message says what to fix."""


def user_skill_dir(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """The user's skill folder: $LIVEFORGE_CONFIG_HOME/skills, else
    $XDG_CONFIG_HOME/liveforge/skills, else ~/.config/liveforge/skills."""
    env = os.environ if env is None else env
    if env.get("LIVEFORGE_CONFIG_HOME"):
        return Path(env["LIVEFORGE_CONFIG_HOME"]).expanduser() / "skills"
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser()
    return base / "liveforge" / "skills"


def _fields(lines: list[str]) -> dict[str, str]:
    """The front matter (file lines 2..) parsed as YAML: keys lower-cased, `-` as `_`."""
    try:
        data = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 2} of the file: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _BadSkill(
            f"{where}the front matter is not valid YAML ({problem}); quote values that "
            "contain `:`, `[`, `{` or `#`"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _BadSkill(f"the front matter is a YAML {type(data).__name__}, not `key: value` lines")
    fields: dict[str, str] = {}
    for key, value in data.items():
        name = str(key).strip().lower().replace("-", "_")
        if isinstance(value, (dict, list)):
            raise _BadSkill(
                f"`{key}` in the front matter is a YAML {type(value).__name__}; "
                "give it a text value"
            )
        fields[name] = "" if value is None else str(value).strip()
    return fields


def parse_skill(text: str, path: Path, source: SkillSource) -> Skill:
    """A Skill from a file's text; ValueError saying what is wrong with it."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise _BadSkill("no front matter: start with a `---` line, `name:` and `description:`")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise _BadSkill("the front matter is not closed by a `---` line")
    fields = _fields(lines[1:end])
    default = path.parent.name if path.name == "SKILL.md" else path.stem
    name = fields.get("name") or default
    if not _NAME.fullmatch(name):
        raise _BadSkill(f"name {name!r} is not a plain name (letters, digits, . _ -)")
    if not fields.get("description"):
        raise _BadSkill("no `description:` in the front matter; the index shows it")
    when = fields.get("when_to_use") or fields.get("when") or ""
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return Skill(
        name=name,
        description=fields["description"],
        when_to_use=when,
        source=source,
        path=path,
        body=body,
    )


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    flat = [p for p in folder.glob("*.md") if p.name.lower() != "readme.md"]
    return sorted(flat + list(folder.glob("*/SKILL.md")))


def _scan(library: SkillLibrary) -> tuple[dict[str, Skill], list[str], dict[str, str]]:
    """(usable skills by name, problem lines, problem by the name a broken file would have)."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    broken: dict[str, str] = {}
    for source, folder in library.folders():
        for path in _files(folder):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                skill = parse_skill(text, path, source)
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: {exc}")
                default = path.parent.name if path.name == "SKILL.md" else path.stem
                broken.setdefault(default, f"{path}: {exc}")
                continue
            if skill.name in found:
                kept = found[skill.name]
                found[skill.name] = kept.model_copy(update={"hides": (*kept.hides, path)})
            else:
                found[skill.name] = skill
    return found, problems, broken


@forwardpy.impl(SkillLibrary.folders)
def folders(self: SkillLibrary) -> list[tuple[SkillSource, Path]]:
    return [
        ("project", self.project_root / ".liveforge" / "skills"),
        ("user", self.user_dir if self.user_dir is not None else user_skill_dir()),
        ("bundled", self.bundled_dir if self.bundled_dir is not None else BUNDLED_DIR),
    ]


@forwardpy.impl(SkillLibrary.skills)
def skills(self: SkillLibrary) -> list[Skill]:
    found, _, _ = _scan(self)
    return [found[name] for name in sorted(found)]


@forwardpy.impl(SkillLibrary.problems)
def problems(self: SkillLibrary) -> list[str]:
    return _scan(self)[1]


@forwardpy.impl(SkillLibrary.load)
def load(self: SkillLibrary, name: str) -> Skill:
    found, _, broken = _scan(self)
    wanted = name.strip()
    if wanted in found:
        return found[wanted]
    if wanted in broken:
        raise SkillNotFound(f"skill {wanted!r} cannot be used: {broken[wanted]}", name=wanted)
    names = ", ".join(sorted(found)) or "none"
    raise SkillNotFound(
        f"no skill named {wanted!r}; the skills are: {names}. "
        "Call load_skill with one of these names.",
        name=wanted,
    )


def _line(skill: Skill) -> str:
    line = f"- {skill.name}: {skill.description}"
    if skill.when_to_use:
        line += f" (use when: {skill.when_to_use})"
    return line if len(line) <= _INDEX_LINE else line[: _INDEX_LINE - 3] + "..."


@forwardpy.impl(SkillLibrary.index)
def index(self: SkillLibrary) -> str:
    return "\n".join(_line(skill) for skill in self.skills())


@forwardpy.impl(SkillLibrary.signature)
def signature(self: SkillLibrary) -> tuple[tuple[str, float], ...]:
    out: list[tuple[str, float]] = []
    for _, folder in self.folders():
        for path in _files(folder):
            try:
                out.append((str(path), path.stat().st_mtime))
            except OSError:
                continue
    return tuple(out)
