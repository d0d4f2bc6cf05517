"""The Python side of one docs example, for test_doc_examples.py: a fresh interpreter, started
in the example's folder, runs the example's Python blocks one after the other in one
namespace, as a reader pasting them into one session would.

Reads one JSON request a line on stdin — ``{"code", "page", "path", "line", "doctest"}``: a
block's text, the page it is on (and its file) and the line its code starts at — and
answers each with one JSON line ``{"stdout", "error"}``: what the block printed, and its
traceback or doctest report (None when it ran through). Tracebacks name the page and its
lines.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import linecache
import os
import sys
import traceback


def main() -> None:
    """Serve requests until stdin closes."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what a block's own children write to fd 1 must not mix with the replies
    sys.path[0] = os.getcwd()  # as `python script.py` in the example's folder would
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    for request in sys.stdin:
        reply = run(json.loads(request), namespace)
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def run(request: dict[str, object], namespace: dict[str, object]) -> dict[str, str | None]:
    """Run one block in `namespace`; its output and its error, if any."""
    page, line, code = str(request["page"]), int(str(request["line"])), str(request["code"])
    if request.get("path"):  # tracebacks then show the page's lines
        with open(str(request["path"]), encoding="utf-8") as text:
            lines = text.readlines()
        linecache.cache[page] = (sum(map(len, lines)), None, lines, page)
    stdout = io.StringIO()
    if request["doctest"]:
        test = doctest.DocTestParser().get_doctest(code, namespace, page, page, line - 1)
        report = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test, out=report.write, clear_globs=False)
        return {"stdout": "", "error": report.getvalue() or None}
    try:
        compiled = compile("\n" * (line - 1) + code, page, "exec")
        with contextlib.redirect_stdout(stdout):
            exec(compiled, namespace)
    except BaseException as exc:  # the block's own error, whatever it is, is the answer
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # from the block on
        frames = traceback.format_exception(type(exc), exc, tb)
        return {"stdout": stdout.getvalue(), "error": "".join(frames)}
    return {"stdout": stdout.getvalue(), "error": None}


if __name__ == "__main__":
    main()
