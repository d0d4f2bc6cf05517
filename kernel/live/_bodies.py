"""Body-only edits of decorated functions: the function behind the decorator's result is
updated in place, and the decorators are not run again.

A decorator runs once, when its definition runs: it registers the function (a Flask route,
a click command, a plugin hook), wraps it in an object (`toolz.curry`, click's `Command`,
`functools.singledispatch`) or both. When an edit changes only the body of a decorated
function — its decorators, name and signature stay as they were — a fresh import would
build the same wrapper and registrations around a function running the new code. So instead
of running the decorators again (which registers twice, builds a second wrapper that earlier
references never see, or is refused: Flask's `app.route` once the app served a request),
the new function alone is made (`def` with its decorators left out, at the same lines), and
the function the old statement defined is found through the live object and updated in
place (see `_update.update_function`). Every reference — the name, a wrapper taken before,
a registry's entry — then runs the new code.

The function is found generically, by walking what the live object holds: `__wrapped__` and
other attributes (instance dicts and slots), bound methods, `functools.partial`, closure
cells, and lists, tuples, dicts and sets inside those. It is the function whose code comes
from the old statement's lines with the statement's name. When it is not found there (a
second `def` of the same name, whose function only a registry holds), the module's own
objects are walked the same way. When it is not found at all, the definition runs again as
before. State a wrapper copied from the function's docstring (`functools.wraps`'s `__doc__`,
click's `help`) follows a changed docstring, and a cache in front of the function is emptied,
as in a fresh import.

Objects can say how they take an update (the protocol jurigged defines): a function with a
`__conform__` attribute of its own, or an object whose class defines `__conform__` and that
holds the old function's code object directly, is not updated by liveforge; its
`__conform__` is called with the new function instead — or with `None` when the definition
is gone from the source. Undoing the change calls it again with a copy of the old function,
and puts back the lists, dicts and sets that held it.
"""

from __future__ import annotations

import ast
import copy
import dis
import functools
import gc
import inspect
import sys
import types
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from liveforge.kernel.live import _holders
from liveforge.kernel.live._classes import MergeContext
from liveforge.kernel.live._functions import classes_in, defined_functions
from liveforge.kernel.live._undo import UndoLog
from liveforge.kernel.live._update import (
    clear_fronts,
    forward,
    is_forwarder,
    shift_code,
    update_function,
)
from liveforge.kernel.source._stmts import Stmt, first_line

_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: objects never looked into: they hold no function a decorator made.
_OPAQUE = (type, types.ModuleType, str, bytes, int, float, complex, bool, type(None))
#: how many objects one search looks at, at most (a wrapper holding an application object
#: must not turn a patch into a walk of the whole program).
_BUDGET = 4000
_DEPTH = 6


def pair(old_run: list[Stmt], new_run: list[Stmt]) -> dict[int, Stmt]:
    """For each statement of `new_run` defining a function (or a class), the statement of
    `old_run` it stands for (by `id` of the new statement). Among several `def`s of one name
    (a registry's `register` returning itself, `singledispatch` implementations `_`): the
    first not yet taken with the same decorators and signature (an overload for the same
    type), else the first not yet taken, in order."""
    pending: dict[tuple[bool, str], list[Stmt]] = {}
    for stmt in old_run:
        if isinstance(stmt.node, _DEFS):
            pending.setdefault(_pair_key(stmt), []).append(stmt)
    defs = [s for s in new_run if isinstance(s.node, _DEFS)]
    pairs: dict[int, Stmt] = {}
    for same in (body_only, None):
        for stmt in defs:
            left = pending.get(_pair_key(stmt))
            if id(stmt) in pairs or not left:
                continue
            found = next((o for o in left if same is None or same(stmt, o)), None)
            if found is not None:
                pairs[id(stmt)] = found
                left.remove(found)
    return pairs


def _pair_key(stmt: Stmt) -> tuple[bool, str]:
    return isinstance(stmt.node, ast.ClassDef), stmt.node.name  # type: ignore[attr-defined]


def unpaired(
    old_run: list[Stmt], pairs: dict[int, Stmt], stayed: Callable[[], set[str]]
) -> list[Stmt]:
    """The function definitions of `old_run` no new statement stands for (gone): neither
    one that ran (`pairs`) nor one of the same text that did not need to (`stayed()`, the
    texts of those, asked only when some old definition is not paired)."""
    taken = {id(s) for s in pairs.values()}
    left = [s for s in old_run if isinstance(s.node, _FUNCTION_DEFS) and id(s) not in taken]
    if not left:
        return []
    texts = stayed()
    return [s for s in left if s.text not in texts]


def body_only(stmt: Stmt, earlier: Stmt | None) -> bool:
    """True when `stmt` is a decorated function definition that differs from `earlier` only
    in its body (docstring included): same decorators, name and signature."""
    new, old = stmt.node, earlier.node if earlier is not None else None
    if not isinstance(new, _FUNCTION_DEFS) or type(old) is not type(new) or not new.decorator_list:
        return False
    return _same_outside(old, new)


def _same_outside(old: ast.stmt, new: ast.stmt) -> bool:
    """Two function definitions alike but for their bodies: kind, name, decorators,
    signature."""
    if not isinstance(new, _FUNCTION_DEFS) or type(old) is not type(new):
        return False
    assert isinstance(old, _FUNCTION_DEFS)
    return (
        old.name == new.name
        and _dumps(old.decorator_list) == _dumps(new.decorator_list)
        and ast.dump(old.args) == ast.dump(new.args)
        and _dump(old.returns) == _dump(new.returns)
        and _dumps(getattr(old, "type_params", [])) == _dumps(getattr(new, "type_params", []))
    )


def _dump(node: ast.AST | None) -> str:
    return ast.dump(node) if node is not None else ""


def _dumps(nodes: list[Any]) -> list[str]:
    return [ast.dump(n) for n in nodes]


def update_body(
    namespace: dict[str, Any], stmt: Stmt, earlier: Stmt, live: Any, flags: int, ctx: MergeContext
) -> bool:
    """Make what the live object `live` (the decorated result of `earlier`) holds run the
    body of `stmt`, without running its decorators. Returns False, changing nothing, when
    the function `earlier` defined is found neither in `live` nor in the module's objects."""
    name = stmt.node.name  # type: ignore[attr-defined]
    match = _defined_by(earlier, name, ctx.filename, ctx.shifted)
    found = _find([live], match)
    if not found:
        # Only a registry holds it (another `def` of the name took the name): what is on
        # the way there is no wrapper of it.
        found = [(target, []) for target, _ in _find(_module_objects(namespace), match)]
    if not found:
        return False
    new = _bare_function(namespace, stmt, live, flags, ctx.filename)
    ctx.created.append(new)
    for target, path in found:
        _take(target, new, path, ctx)
    decorators = ", ".join("@" + ast.unparse(d) for d in stmt.node.decorator_list)  # type: ignore[attr-defined]
    ctx.notes.append(
        f"{name}: only its body changed: updated in place, its decorators ({decorators}) "
        "not run again (what they registered or wrapped runs the new code)"
    )
    return True


def _defined_by(stmt: Stmt, name: str, filename: str, moved: set[int] | None = None) -> Any:
    """A test of code objects: made by the definition `stmt` (its name, file and lines).
    `moved`: ids of code objects a moved statement's functions took this change, whose new
    lines may fall in the old range of `stmt` (another `def` of the name moved there)."""

    def match(code: types.CodeType) -> bool:
        return (
            code.co_name == name
            and code.co_filename == filename
            and stmt.start <= code.co_firstlineno <= stmt.end
            and (not moved or id(code) not in moved)
        )

    return match


def _module_objects(namespace: dict[str, Any]) -> list[Any]:
    """The module's objects a registry may sit in (not modules, classes or plain values)."""
    return [v for k, v in list(namespace.items()) if k[:2] != "__" and not isinstance(v, _OPAQUE)]


def _bare_function(
    namespace: dict[str, Any], stmt: Stmt, live: Any, flags: int, filename: str
) -> types.FunctionType:
    """The function `stmt` defines, its decorators left out: compiled at the statement's
    own lines (an identity decorator stands at the first decorator's place, so the code's
    first line is the one a decorated definition has), run in the module's namespace, the
    name bound to `live` again."""
    node = copy.deepcopy(stmt.fresh_node())
    assert isinstance(node, _FUNCTION_DEFS)
    first = node.decorator_list[0]
    arg = ast.arguments(
        posonlyargs=[], args=[ast.arg("f")], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    identity = ast.Lambda(args=arg, body=ast.Name("f", ast.Load()))
    node.decorator_list = [identity]
    ast.copy_location(identity, first)
    ast.fix_missing_locations(node)
    tree = ast.Module(body=[node], type_ignores=[])
    exec(compile(tree, filename, "exec", flags=flags, dont_inherit=True), namespace)
    new = namespace[node.name]
    namespace[node.name] = live
    assert isinstance(new, types.FunctionType)
    return new


def _take(target: Any, new: types.FunctionType, path: list[Any], ctx: MergeContext) -> None:
    """`target` (the old function, or an object holding its code) takes `new`: through its
    `__conform__` when it declares one, else updated in place keeping the attributes its
    decorators gave it; then the wrappers on `path` follow."""
    old_doc = getattr(target, "__doc__", None)
    if conforms(target):
        conform(target, new, ctx.log, new.__globals__)
    else:
        kept = dict(target.__dict__)
        note = update_function(target, new, ctx.log, ctx.idmap)
        ctx.shifted.add(id(target.__code__))  # at its new lines: no old range's any more
        for key, value in kept.items():
            target.__dict__.setdefault(key, value)
        if note:
            ctx.notes.append(note)
        ctx.idmap.link(new, target)
    for wrapper in path:
        _follow_doc(wrapper, old_doc, new.__doc__, ctx.log)
        _empty_cache(wrapper, ctx.log)


def conforms(obj: Any) -> bool:
    """True when `obj` declares how it takes an update: a function with a `__conform__` of
    its own, or an object whose class defines one (see the module docstring)."""
    if isinstance(obj, types.FunctionType):
        return callable(obj.__dict__.get("__conform__"))
    return callable(inspect.getattr_static(obj, "__conform__", None))


def conform(
    obj: Any, new: types.FunctionType | None, log: UndoLog, namespace: dict[str, Any]
) -> None:
    """Give `obj` the new function (`None`: the definition is gone) through its
    `__conform__`; undone, it gets a copy of its old function the same way, its own state
    comes back and the lists, dicts and sets that held it are as they were."""
    held = _containers(obj)
    saved = [(h, h.copy()) for h in held]
    before = _copy(obj, namespace)
    state = dict(obj.__dict__) if isinstance(obj, types.FunctionType) else None
    code = obj.__code__ if isinstance(obj, types.FunctionType) else None

    def undo() -> None:
        if before is not None:
            obj.__conform__(before)
        if code is not None and state is not None:
            obj.__code__ = code
            obj.__dict__.clear()
            obj.__dict__.update(state)
        for holder, content in saved:
            _put_back(holder, content)

    log.add(undo)
    obj.__conform__(new)


def _copy(obj: Any, namespace: dict[str, Any]) -> types.FunctionType | None:
    """A new function object running what `obj` runs now (for an object holding a code
    object: that code, when it needs no closure)."""
    if not isinstance(obj, types.FunctionType):
        held = [*gc.get_referents(obj), *_children(obj)]
        codes = list({id(c): c for c in held if isinstance(c, types.CodeType)}.values())
        if len(codes) != 1 or codes[0].co_freevars:
            return None
        return types.FunctionType(codes[0], namespace, codes[0].co_name)
    func = obj
    twin = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    twin.__kwdefaults__ = func.__kwdefaults__
    twin.__doc__ = func.__doc__
    return twin


def _containers(obj: Any) -> list[Any]:
    """The lists, dicts and sets holding `obj` (a heap search: only for `__conform__`)."""
    return [
        h
        for h in _holders.referrers((obj,))
        if isinstance(h, (list, set)) or (isinstance(h, dict) and "__builtins__" not in h)
    ]


def _put_back(holder: Any, content: Any) -> None:
    if isinstance(holder, list):
        holder[:] = content
    else:
        holder.clear()
        holder.update(content)


def gone(
    stmts: list[Stmt], saved: dict[str, Any], namespace: dict[str, Any], ctx: MergeContext
) -> list[tuple[str, types.FunctionType]]:
    """Function definitions the new source no longer has: those of their functions that
    declare `__conform__` are told (`None`), as they ask to be. Returns the others, each
    with its name."""
    others: list[tuple[str, types.FunctionType]] = []
    if not stmts:
        return others
    # Code this change gave functions (made anew, updated in place, moved) is at new lines,
    # which may fall in a gone statement's old range (another `def` of the name took its
    # place): not what that statement made.
    made = {id(f.__code__) for f in ctx.created if isinstance(f, types.FunctionType)}
    new_code = made | ctx.shifted
    for stmt in stmts:
        name = stmt.node.name  # type: ignore[attr-defined]
        match = _defined_by(stmt, name, ctx.filename, new_code)
        roots = [saved[name]] if name in saved else []
        found = _find(roots, match) if roots else []
        if not found:
            found = _find(_module_objects(namespace), match)
        for target, _ in found:
            if conforms(target):
                conform(target, None, ctx.log, namespace)
            elif isinstance(target, types.FunctionType):
                others.append((name, target))
    return others


def held_in_module(
    namespace: dict[str, Any],
    name: str,
    filename: str,
    first: int,
    last: int,
    moved: set[int] | None = None,
) -> list[types.FunctionType]:
    """Functions named `name` that a definition at lines `first`..`last` made and that only
    the module's objects hold (a `singledispatch` overload `_` a later one shadows, a
    function inside a wrapper a later statement made); none whose code is in `moved`."""

    def match(code: types.CodeType) -> bool:
        return (
            code.co_name == name
            and code.co_filename == filename
            and first <= code.co_firstlineno <= last
            and (not moved or id(code) not in moved)
        )

    found = _find(_module_objects(namespace), match)
    return [t for t, _ in found if isinstance(t, types.FunctionType)]


def made_by(value: Any, stmt: Stmt, filename: str) -> bool:
    """True when `value` is the function the definition `stmt` made itself (no wrapper)."""
    name = getattr(stmt.node, "name", None)
    return isinstance(value, types.FunctionType) and bool(
        _defined_by(stmt, name or "", filename)(value.__code__)
    )


def update_inside(
    live: Any, new: types.FunctionType, earlier: Stmt, ctx: MergeContext
) -> types.FunctionType | None:
    """A later statement wrapped what `earlier` defined (`f = deco(f)`), so the name holds
    the wrapper `live`: the function `earlier` made, found inside it, takes `new` in place
    (what the wrapper holds runs the new code, as in a fresh import's wrapper). Returns that
    function, or None (nothing changed) when `live` holds none."""
    name = earlier.node.name  # type: ignore[attr-defined]
    match = _defined_by(earlier, name, ctx.filename)
    found = [(t, p) for t, p in _find([live], match) if isinstance(t, types.FunctionType)]
    for target, path in found:
        _take(target, new, path, ctx)
    return found[0][0] if found else None


def inside(live: Any, stmt: Stmt, filename: str, made: bool = False) -> Any:
    """The function the definition `stmt` made, found inside the wrapper `live` (or
    `live` itself), or None. `made`: what the statement itself made (its decorators'
    wrapper) when `live` is one wrapper a later statement made around it."""
    name = getattr(stmt.node, "name", "")
    found = [
        (t, p)
        for t, p in _find([live], _defined_by(stmt, name, filename))
        if isinstance(t, types.FunctionType)
    ]
    if not found:
        return None
    target = found[0][0]
    if made and target is not live:
        # What `live` wraps that leads to the function: what the definition made, its own
        # decorators' wrapper included. The first such (a closure cell, the attribute its
        # constructor set first) — not a copy `functools.wraps` made of the inner one's
        # attributes (a `__conform__` holding the function), which come later.
        match = _defined_by(stmt, name, filename)
        # `__wrapped__` first: `functools.update_wrapper` sets it last, after copying the
        # wrapped object's attributes, which may hide what the constructor stored
        wrapped = getattr(live, "__wrapped__", None)
        for child in [wrapped, *_children(live)] if wrapped is not None else _children(live):
            if child is target:
                return target
            if not isinstance(child, _OPAQUE) and _find([child], match):
                return child
    return target


def forward_old(
    name: str, old: Any, new: Any, earlier: Stmt, stmt: Stmt, ctx: MergeContext
) -> str | None:
    """A changed decorator made `new`, which cannot be merged into the live wrapper object
    `old` (another kind of object): the function `old` holds, which `earlier` defined, now
    forwards every call to the function `stmt` defined (inside `new`, or `new` itself), so
    references to `old` taken before run the new code. Returns a note, or None when `old`
    holds no such function."""
    if isinstance(old, (types.FunctionType, type)) or not callable(new):
        return None
    match = _defined_by(earlier, name, ctx.filename)
    found = [t for t, _ in _find([old], match) if isinstance(t, types.FunctionType)]
    inner = [t for t, _ in _find([new], _defined_by(stmt, name, ctx.filename))]
    # The old wrapper still wraps: it forwards to the new function, not to the new wrapper.
    target = next((t for t in inner if isinstance(t, types.FunctionType)), new)
    for func in found:
        forward(func, target, ctx.log)
    if not found:
        return None
    return (
        f"{name}: the new definition is a {_kind(new)} where the old one was a {_kind(old)}; "
        f"{name} now holds the new object, and the function inside the old one forwards "
        "every call to it, so references taken before run the new code (the old object "
        "itself, its type and attributes, stays as it was)"
    )


def _kind(value: Any) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


# -- methods of a class whose other statements did not change ------------------------------

#: a changed method: its class path from the module (`Outer.Inner`), old and new definition.
Member = tuple[tuple[str, ...], ast.stmt, ast.stmt]


def members_only(stmt: Stmt, earlier: Stmt) -> list[Member] | None:
    """For a class definition that differs from `earlier` only in bodies of its methods
    (their decorators, names and signatures as they were; every other statement of the
    class, nested classes included, the same), the changed methods; None otherwise, or when
    a statement of the class body (not a definition) reads a changed method's name, as it
    would compute something new when the class runs again."""
    new, old = stmt.fresh_node(), earlier.fresh_node()
    if not isinstance(new, ast.ClassDef) or not isinstance(old, ast.ClassDef):
        return None
    changed = _members(old, new, ())
    if not changed or _reads(new, {n.name for _, _, n in changed}):  # type: ignore[attr-defined]
        return None
    return changed


def _members(old: ast.ClassDef, new: ast.ClassDef, path: tuple[str, ...]) -> list[Member] | None:
    outside = ("name", "bases", "keywords", "decorator_list", "type_params")
    if any(_dump_field(old, f) != _dump_field(new, f) for f in outside) or len(old.body) != len(
        new.body
    ):
        return None
    path = (*path, new.name)
    changed: list[Member] = []
    for before, after in zip(old.body, new.body, strict=True):
        if ast.dump(before) == ast.dump(after):
            continue
        if _same_outside(before, after):
            changed.append((path, before, after))
        elif isinstance(before, ast.ClassDef) and isinstance(after, ast.ClassDef):
            inner = _members(before, after, path)
            if inner is None:
                return None
            changed += inner
        else:
            return None
    return changed


def _dump_field(node: ast.AST, name: str) -> list[str]:
    value = getattr(node, name, [])
    return [value] if isinstance(value, str) else _dumps(value)


def _reads(cls: ast.ClassDef, names: set[str]) -> bool:
    """True when a statement of the class body (nested classes too) other than a definition
    reads one of `names`."""
    for node in cls.body:
        if isinstance(node, ast.ClassDef):
            if _reads(node, names):
                return True
        elif not isinstance(node, _FUNCTION_DEFS) and any(
            isinstance(n, ast.Name) and n.id in names for n in ast.walk(node)
        ):
            return True
    return False


def update_members(
    namespace: dict[str, Any],
    stmt: Stmt,
    earlier: Stmt,
    live: Any,
    flags: int,
    ctx: MergeContext,
) -> list[str] | None:
    """Make the live class `live` (what `earlier` made) run the new bodies of the methods
    `stmt` changed, without running the class body again: its decorators, the decorators of
    its methods and its hooks stay as they ran (a fresh import would register the same
    things). Methods below a changed one have their lines moved. Returns the changed
    methods' names (`Outer.Inner.method`), or None, changing nothing, when the statement
    must run as it is."""
    if not isinstance(live, type) or live.__module__ != namespace.get("__name__"):
        return None
    changed = members_only(stmt, earlier)
    if changed is None:
        return None
    targets = []
    for path, before, after in changed:
        holder = _attribute(live, path[1:])
        if holder is None:
            return None
        match = _lines_of(before, ctx.filename)
        found = _find([holder.__dict__.get(after.name)], match)  # type: ignore[attr-defined]
        if not found:
            return None
        targets.append((path, after, holder, found))
    moves = [
        (before.end_lineno or before.lineno, (after.end_lineno or 0) - (before.end_lineno or 0))
        for _, before, after in changed
    ]
    functions = defined_functions(live, ctx.filename, earlier.start, earlier.end)
    for path, after, holder, found in targets:
        new = _bare_method(namespace, path, after, holder, flags, ctx)
        ctx.created.append(new)
        for target, way in found:
            _take(target, new, way, ctx)
        assert isinstance(after, _FUNCTION_DEFS)
        decorators = ", ".join("@" + ast.unparse(d) for d in after.decorator_list)
        if decorators:
            ctx.notes.append(
                f"{'.'.join((*path, after.name))}: only its body changed: updated in place, "
                f"its decorators ({decorators}) not run again (what they registered or "
                "wrapped runs the new code)"
            )
    updated = {id(t) for _, _, _, found in targets for t, _ in found}
    _shift_below(live, functions, updated, moves, ctx)
    if sys.version_info >= (3, 13):
        _static_attributes(stmt, live, {path for path, _, _ in changed}, ctx)
    return list(dict.fromkeys(".".join((*path, a.name)) for path, _, a in changed))  # type: ignore[attr-defined]


def _static_attributes(
    stmt: Stmt, live: type, paths: set[tuple[str, ...]], ctx: MergeContext
) -> None:
    """From Python 3.13 a class records the `self.x` names its methods assign
    (`__static_attributes__`): the classes whose methods changed take what the new class
    statement gives (compiled, not run), as a fresh import's would."""
    node = copy.deepcopy(stmt.fresh_node())
    code = compile(ast.Module(body=[node], type_ignores=[]), ctx.filename, "exec")
    for path in paths:
        body = code
        for name in path:
            body = next(
                c for c in body.co_consts if isinstance(c, types.CodeType) and c.co_name == name
            )
        names = _stored_static(body)
        holder = _attribute(live, path[1:])
        if names is None or holder is None:
            continue
        before = holder.__dict__.get("__static_attributes__")
        if before != names:
            ctx.log.add(
                functools.partial(type.__setattr__, holder, "__static_attributes__", before)
            )
            type.__setattr__(holder, "__static_attributes__", names)


def _stored_static(body: types.CodeType) -> tuple[str, ...] | None:
    """The tuple a class body's code stores as `__static_attributes__`."""
    value = None
    for instruction in dis.get_instructions(body):
        if instruction.opname == "LOAD_CONST":
            value = instruction.argval
        elif instruction.opname == "STORE_NAME" and instruction.argval == "__static_attributes__":
            return value if isinstance(value, tuple) else None
    return None


def _attribute(cls: type, path: tuple[str, ...]) -> type | None:
    """The nested class `path` names inside `cls` (`cls` itself for an empty path)."""
    for name in path:
        inner = cls.__dict__.get(name)
        if not isinstance(inner, type):
            return None
        cls = inner
    return cls


def _lines_of(node: ast.stmt, filename: str) -> Any:
    first, last = first_line(node), node.end_lineno or node.lineno
    name = node.name  # type: ignore[attr-defined]

    def match(code: types.CodeType) -> bool:
        return (
            code.co_name == name
            and code.co_filename == filename
            and first <= code.co_firstlineno <= last
        )

    return match


def _bare_method(
    namespace: dict[str, Any],
    path: tuple[str, ...],
    node: ast.stmt,
    holder: type,
    flags: int,
    ctx: MergeContext,
) -> types.FunctionType:
    """The method `node` defines, its decorators left out, compiled inside classes of the
    names in `path` at its own lines (so private names are mangled, `super()` works and its
    qualified name is right) and run with the module's globals, apart from the module's
    names. The stand-in class is the live one to the update (`ctx.idmap`)."""
    method = copy.deepcopy(node)
    assert isinstance(method, _FUNCTION_DEFS)
    if method.decorator_list:
        first = method.decorator_list[0]
        arg = ast.arguments(
            posonlyargs=[], args=[ast.arg("f")], kwonlyargs=[], kw_defaults=[], defaults=[]
        )
        identity = ast.Lambda(args=arg, body=ast.Name("f", ast.Load()))
        ast.copy_location(identity, first)
        method.decorator_list = [identity]
    body: ast.stmt = method
    scratch: dict[str, Any] = {}
    owner: type | None = holder
    for depth, name in reversed(list(enumerate(path))):
        # The class body's names (a default naming a class constant) are the live class's.
        meta = f"__liveforge_shell_{depth}__"
        scratch[meta] = _shell_of(owner, scratch)
        keyword = ast.keyword(arg="metaclass", value=ast.Name(meta, ast.Load()))
        shell = ast.ClassDef(
            name=name, bases=[], keywords=[keyword], body=[body], decorator_list=[]
        )
        if sys.version_info >= (3, 12):
            shell.type_params = []
        body = ast.copy_location(shell, method)
        owner = _outer(holder, path, depth)
    ast.fix_missing_locations(body)
    code = compile(ast.Module(body=[body], type_ignores=[]), ctx.filename, "exec", flags, True)
    exec(code, namespace, scratch)
    stand_in = scratch[path[0]]
    for name in path[1:]:
        stand_in = stand_in.__dict__[name]
    ctx.idmap.link(stand_in, holder)
    new = stand_in.__dict__[method.name]
    assert isinstance(new, types.FunctionType)
    return new


def _outer(holder: type, path: tuple[str, ...], depth: int) -> type | None:
    """The live class at `depth - 1` of `path`, where `holder` is the innermost one."""
    if depth == 0:
        return None
    module = sys.modules.get(holder.__module__)
    return _attribute(getattr(module, path[0]), path[1:depth]) if module else None


class _LiveNames(dict[str, Any]):
    """A stand-in class body's namespace: a name it does not bind is looked up in the live
    class's own (only looked up: the new class gets none of them), then among the stand-in
    metaclasses."""

    def __init__(self, live: type | None, shells: dict[str, Any]) -> None:
        super().__init__()
        self._live, self._shells = live, shells

    def __missing__(self, key: str) -> Any:
        if self._live is not None and key in self._live.__dict__:
            return self._live.__dict__[key]
        if key in self._shells:
            return self._shells[key]
        raise KeyError(key)


def _shell_of(live: type | None, shells: dict[str, Any]) -> type:
    """A metaclass whose classes' bodies read the names of `live`'s body."""

    class Shell(type):
        @classmethod
        def __prepare__(  # type: ignore[override]
            mcs, name: str, bases: tuple[type, ...], **kwds: Any
        ) -> dict[str, Any]:
            return _LiveNames(live, shells)

        def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
            return type.__new__(mcs, name, bases, dict(ns))

    return Shell


def _shift_below(
    live: type,
    functions: list[types.FunctionType],
    updated: set[int],
    moves: list[tuple[int, int]],
    ctx: MergeContext,
) -> None:
    """Functions of the class below a changed method (`moves`: the last old line of each
    changed method, and how many lines it grew) take their new lines; nested classes below
    one (Python 3.13+) too."""
    moves = sorted(moves)

    def delta(line: int) -> int:
        return sum(grew for end, grew in moves if end < line)

    codes = [(f, f.__code__) for f in functions if id(f) not in updated]
    for func, code in codes:
        if delta(code.co_firstlineno):
            func.__code__ = shift_code(code, delta(code.co_firstlineno))
    ctx.log.add(functools.partial(_codes_back, codes))
    for cls in classes_in([live], live.__module__):
        line = cls.__dict__.get("__firstlineno__")
        if isinstance(line, int) and delta(line):
            ctx.log.add(functools.partial(type.__setattr__, cls, "__firstlineno__", line))
            type.__setattr__(cls, "__firstlineno__", line + delta(line))


def _codes_back(codes: list[tuple[types.FunctionType, types.CodeType]]) -> None:
    for func, code in codes:
        func.__code__ = code


# -- finding the function behind a wrapper ------------------------------------------------


def _find(roots: list[Any], match: Any) -> list[tuple[Any, list[Any]]]:
    """The functions matching `match` reachable from `roots` (or objects declaring
    `__conform__` that hold such a function's code), each with the wrapper objects on the
    way to it, outermost first. Breadth first, within a budget."""
    queue: deque[tuple[Any, list[Any], int]] = deque((r, [], 0) for r in roots)
    seen: set[int] = set()
    found: list[tuple[Any, list[Any]]] = []
    while queue and len(seen) < _BUDGET:
        obj, path, depth = queue.popleft()
        if id(obj) in seen or isinstance(obj, _OPAQUE):
            continue
        seen.add(id(obj))
        # A forwarder (see `_update`) is named after what it forwards to: looked through.
        if isinstance(obj, types.FunctionType) and not is_forwarder(obj) and match(obj.__code__):
            found.append((obj, path))
            continue
        if not isinstance(obj, types.FunctionType) and conforms(obj) and _holds_code(obj, match):
            found.append((obj, path))
            continue
        if depth < _DEPTH:
            inner = [*path, obj] if not isinstance(obj, _CONTAINERS) else path
            queue.extend((child, inner, depth + 1) for child in _children(obj))
    return found


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _holds_code(obj: Any, match: Any) -> bool:
    """`obj` holds a code object `match` takes (in its attributes, or where C code keeps
    it)."""
    held = [*gc.get_referents(obj), *_children(obj)]
    return any(isinstance(c, types.CodeType) and match(c) for c in held)


def _children(obj: Any) -> Iterator[Any]:
    """What a wrapper holds that may lead to the function it wraps."""
    if isinstance(obj, dict):
        yield from list(obj.values())
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        yield from list(obj)
        return
    if isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            try:
                yield cell.cell_contents
            except ValueError:
                continue
        yield from list(obj.__dict__.values())
        return
    if isinstance(obj, types.MethodType):
        yield obj.__func__
        return
    if isinstance(obj, functools.partial):
        yield obj.func
        yield from obj.args
        yield from obj.keywords.values()
        return
    if isinstance(obj, (classmethod, staticmethod)):
        yield obj.__func__
        return
    if isinstance(obj, property):
        yield from (obj.fget, obj.fset, obj.fdel)
        return
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        yield from list(state.values())
    for cls in type(obj).__mro__:
        for slot in _slots(cls):
            try:
                yield object.__getattribute__(obj, slot)
            except AttributeError:
                continue


def _slots(cls: type) -> tuple[str, ...]:
    slots = cls.__dict__.get("__slots__", ())
    if isinstance(slots, str):
        return (slots,)
    return tuple(s for s in slots if isinstance(s, str) and s not in ("__dict__", "__weakref__"))


# -- what a wrapper copied from the function ------------------------------------------------


def _follow_doc(wrapper: Any, old: Any, new: Any, log: UndoLog) -> None:
    """A wrapper's `__doc__` (and attributes such as click's `help`) copied from the old
    docstring take the new one, as a fresh decoration would copy it."""
    if old == new or not isinstance(old, str):
        return
    if getattr(wrapper, "__doc__", None) == old:
        try:
            wrapper.__doc__ = new
        except (AttributeError, TypeError):
            pass
        else:
            log.add(functools.partial(setattr, wrapper, "__doc__", old))
    state = getattr(wrapper, "__dict__", None)
    if not isinstance(state, dict) or isinstance(wrapper, types.FunctionType):
        return
    for key, value in list(state.items()):
        if key != "__doc__" and isinstance(value, str) and value == old:
            state[key] = new
            log.add(functools.partial(state.__setitem__, key, value))


def _empty_cache(wrapper: Any, log: UndoLog) -> None:
    """A cache in front of the updated function holds results of the old code: emptied (and
    emptied again when the change is undone), as a fresh import starts empty."""
    if isinstance(wrapper, types.FunctionType):
        clear_fronts(wrapper)  # an `lru_cache` captured before its decorator was removed
    clear = getattr(wrapper, "cache_clear", None)
    if callable(clear):
        clear()
        log.add(clear)
        return
    # A memoizing closure keeps its results in a dict of its own: an attribute or a closure
    # variable named for a cache (toolz's `memoize` keeps `cache` in its closure).
    if not isinstance(wrapper, types.FunctionType):
        return
    cells = zip(wrapper.__code__.co_freevars, wrapper.__closure__ or (), strict=True)
    held = [v for k, v in wrapper.__dict__.items() if _cache_name(k)]
    held += [_contents(c) for k, c in cells if _cache_name(k)]
    for cache in held:
        if isinstance(cache, dict) and cache:
            cache.clear()
            log.add(cache.clear)


def _cache_name(name: str) -> bool:
    return name.strip("_").endswith(("cache", "memo"))


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None
