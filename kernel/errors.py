"""The exception tree of liveforge.

    LiveforgeError
     ├── PatchError                   a patch could not be applied (target, line)
     │    ├── PatchSyntaxError        new source does not compile        (+ SyntaxError)
     │    ├── PatchExecutionError     new source raised while executing
     │    └── UnsupportedChange       the change cannot be made in place (e.g. __slots__)
     ├── TargetNotFound               no such dotted path (close matches)  (+ LookupError)
     ├── InvalidName                  '', '.', '../x' as a module name or path (+ ValueError)
     ├── UndecodableSource            a source file that is not text in its encoding
     │                                                                    (+ UnicodeError)
     ├── ProtectedTarget              kernel (or protected) files, no opt-in (+ PermissionError)
     │    └── NotProjectModule        a module outside the project's own code, no opt-in
     ├── SecondModuleName             one file under a second module name   (+ ImportError)
     ├── ProjectImportError           a project module raised while imported (+ ImportError)
     ├── UnpersistedChanges           reload would drop in-memory changes
     ├── ChangeError                  unknown change id / cannot roll back  (+ LookupError)
     ├── ExecutionTimeout             in-process code ran past its timeout  (+ TimeoutError)
     ├── PersistError                 files could not be written
     │    ├── PersistConflict         file changed on disk since it was loaded
     │    ├── UnsafePath              path outside the project root       (+ PermissionError)
     │    │    └── NotProjectCode     not the project's own code (an environment, build output)
     │    └── UnverifiedChange        no passing verification since the last edit
     ├── SandboxError                 a sandbox run could not be started
     └── ConfigError                  bad configuration value               (+ ValueError)

Every error says what happened and what to do next. A failed operation leaves the previous
state intact.
"""

from __future__ import annotations

import difflib


class LiveforgeError(Exception):
    """Base class of every error raised by liveforge."""


class PatchError(LiveforgeError):
    """A patch could not be applied; the previous state is intact."""

    def __init__(self, message: str, *, target: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.target = target
        self.line = line


class PatchSyntaxError(PatchError, SyntaxError):
    """The new source does not compile."""

    def __init__(
        self,
        message: str,
        *,
        target: str = "",
        line: int | None = None,
        filename: str | None = None,
        text: str | None = None,
        offset: int | None = None,
    ) -> None:
        PatchError.__init__(self, message, target=target, line=line)
        self.msg = message
        self.filename = filename
        self.lineno = line
        self.offset = offset
        self.text = text

    def __str__(self) -> str:
        return self.msg


class PatchExecutionError(PatchError):
    """The new source raised while it was executed; nothing was changed."""


class UnsupportedChange(PatchError):
    """The change cannot be applied in place (for example a `__slots__` layout change)."""


class TargetNotFound(LiveforgeError, LookupError):
    """A dotted path names nothing; `suggestions` holds close matches, the project's first."""

    def __init__(
        self,
        target: str,
        candidates: list[str] | tuple[str, ...] = (),
        hint: str = "",
        *,
        project: list[str] | tuple[str, ...] = (),
    ) -> None:
        self.target = target
        # the user's own names (`project`) come before the others (say, the standard library)
        own = difflib.get_close_matches(target, list(project), n=5, cutoff=0.5)
        parent, _, leaf = target.rpartition(".")
        siblings = [c for c in candidates if parent and c.rpartition(".")[0] == parent]
        if siblings:
            # the last name is what is mistyped: `pkg.nope` is not close to `pkg.__all__`
            # because both start with `pkg.`
            by_leaf = {c.rpartition(".")[2]: c for c in siblings}
            near = difflib.get_close_matches(leaf, list(by_leaf), n=5, cutoff=0.6)
            others = [by_leaf[name] for name in near]
        else:
            others = difflib.get_close_matches(target, list(candidates), n=5, cutoff=0.5)
        self.suggestions = [*own, *(m for m in others if m not in own)][:5]
        message = f"{target!r} was not found"
        if project and not own:
            listed = ", ".join(project[:10]) + (", ..." if len(project) > 10 else "")
            message += f"; the project has: {listed}"
            if self.suggestions:
                message += "; close matches elsewhere: " + ", ".join(self.suggestions)
        elif self.suggestions:
            message += "; close matches: " + ", ".join(self.suggestions)
        message += ". " + (hint or "Check the dotted path (inspect the parent to list names).")
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidName(LiveforgeError, ValueError):
    """A module name or dotted path that cannot name anything (``''``, ``'.'``, ``'../x'``)."""

    def __init__(self, name: str, *, what: str = "module name") -> None:
        self.name = name
        super().__init__(
            f"{name!r} is not a valid {what}: it must be dotted Python identifiers such as "
            "'pkg.mod' or 'pkg.mod.Class.method' (no slashes, no empty parts, no keywords). "
            "Nothing was changed."
        )


class UndecodableSource(LiveforgeError, UnicodeError):
    """A Python source file whose bytes are not text in its declared (or default) encoding."""

    def __init__(self, path: str, encoding: str, detail: str) -> None:
        self.path = path
        self.encoding = encoding
        self.detail = detail
        super().__init__(
            f"{path} cannot be read as {encoding} text ({detail}), so liveforge cannot load "
            "it as Python source. Save it as UTF-8, or declare its encoding on the first or "
            "second line (PEP 263), e.g. '# -*- coding: latin-1 -*-'."
        )

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def reason(self) -> str:
        """What is wrong, short: "not utf-8 text: byte 0xe9 on line 2, at byte 26: ..."."""
        if self.encoding == "its declared encoding":
            return self.detail
        return f"not {self.encoding} text: {self.detail}"


class ProtectedTarget(LiveforgeError, PermissionError):
    """The target belongs to liveforge's kernel (or another protected file), which refuses
    patches."""

    def __init__(self, target: str, *, place: str = "liveforge.kernel", hint: str = "") -> None:
        self.target = target
        self.place = place
        super().__init__(
            f"{target!r} is part of {place}, which refuses patches. "
            + (hint or "Create the runtime with Runtime(allow_kernel_patches=True) to allow them.")
        )


class NotProjectModule(ProtectedTarget):
    """A patch of a module whose file is not the project's own code (the standard library,
    site-packages, an environment under the project) without the opt-in; `filename` and
    `reason` say where it lives. `what` is the message without the way out."""

    def __init__(
        self, target: str, *, module: str, filename: str, reason: str, advice: str = ""
    ) -> None:
        self.module = module
        self.filename = filename
        self.reason = reason
        self.what = (
            f"{target!r} is in {module}, which is not the project's own code: its file "
            f"{filename} is {reason}. Patching it changes liveforge's own process too, and "
            "persist will not write it."
        )
        advice = advice or (
            "Pass outside_project=True (to patch(), or to Runtime()) to patch it anyway."
        )
        LiveforgeError.__init__(self, f"{self.what} {advice}")
        self.target = target
        self.place = module

    def with_advice(self, advice: str) -> NotProjectModule:
        """The same refusal with the way out in a front end's words."""
        return NotProjectModule(
            self.target,
            module=self.module,
            filename=self.filename,
            reason=self.reason,
            advice=advice,
        )

    def __str__(self) -> str:
        return str(self.args[0])


class SecondModuleName(LiveforgeError, ImportError):
    """A file that is already one module was asked for under another name."""

    def __init__(self, name: str, first: str, path: str) -> None:
        self.module = name
        self.first = first
        self.filepath = path
        super().__init__(
            f"{path} is module {first!r}; liveforge never loads or patches one file as a "
            f"second module ({name!r}). Use {first!r} instead.",
            name=name,
            path=path,
        )


class ProjectImportError(LiveforgeError, ImportError):
    """Importing a module of the project raised; `module` is the one being imported,
    `filename` and `line` where the exception came from (relative to the project), `error`
    the exception as `Type: message`."""

    def __init__(
        self,
        message: str,
        *,
        module: str,
        filename: str = "",
        line: int | None = None,
        error: str = "",
    ) -> None:
        super().__init__(message, name=module, path=filename or None)
        self.module = module
        self.filename = filename
        self.line = line
        self.error = error

    def __str__(self) -> str:
        return str(self.args[0])


class UnpersistedChanges(LiveforgeError):
    """An operation would silently discard in-memory changes."""

    def __init__(self, module: str, change_ids: list[str]) -> None:
        self.module = module
        self.change_ids = change_ids
        super().__init__(
            f"{module!r} has unpersisted in-memory changes ({', '.join(change_ids)}); reloading "
            "from disk would drop them. Persist or roll them back first, or pass force=True."
        )


class ChangeError(LiveforgeError, LookupError):
    """A change id is unknown or the change cannot be rolled back."""

    def __init__(self, message: str, *, change_id: str = "") -> None:
        super().__init__(message)
        self.change_id = change_id


class ExecutionTimeout(LiveforgeError, TimeoutError):
    """In-process code ran past its timeout and was interrupted."""


class PersistError(LiveforgeError):
    """Changes could not be written to files; no file was modified."""

    def __init__(self, message: str, *, path: str = "", module: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.module = module


class PersistConflict(PersistError):
    """The file changed on disk since liveforge loaded it."""

    def __init__(self, message: str, *, path: str = "", module: str = "", diff: str = "") -> None:
        super().__init__(message, path=path, module=module)
        self.diff = diff


class UnsafePath(PersistError, PermissionError):
    """The destination lies outside the project root."""


class NotProjectCode(UnsafePath):
    """The file is not the project's own code (outside the root, in an environment or
    installed packages, in build output) and no ``allow_paths`` folder holds it; `reason`
    says which, `folder` what to allow. `what` is the message without the advice, for
    front ends that say the way out in their own words."""

    def __init__(
        self, path: str, reason: str, folder: str, *, module: str = "", advice: str = ""
    ) -> None:
        self.reason = reason
        self.folder = folder
        owner = f"module {module}: its file " if module else ""
        self.what = (
            f"{owner}{path} is not the project's own code ({reason}); liveforge writes only "
            "the project's source files, so nothing was written."
            + (" Leave it out (persist the others) or roll it back." if module else "")
        )
        advice = advice or f"To write there, allow the folder: Runtime(allow_paths=[{folder!r}])."
        super().__init__(f"{self.what} {advice}", path=path, module=module)

    def with_advice(self, advice: str) -> NotProjectCode:
        """The same refusal with the way out in a front end's words (`{folder}` is
        replaced by the folder to allow)."""
        advice = advice.replace("{folder}", repr(self.folder))
        return NotProjectCode(
            self.path, self.reason, self.folder, module=self.module, advice=advice
        )


class UnverifiedChange(PersistError):
    """A change has no passing verification since its last edit."""


class SandboxError(LiveforgeError):
    """A sandbox run could not be started or its result could not be read."""


class ConfigError(LiveforgeError, ValueError):
    """A configuration value is invalid; `key` names it."""

    def __init__(self, message: str, *, key: str = "") -> None:
        super().__init__(message)
        self.key = key
