"""One-shot checks from the command line: `verify`, `test` and `runs` (`checking`), `apply`
(`applying`), the progress they show while a check runs (`_progress`), and Ctrl-C stopping
the check's processes (`_cancel`, which `chat` and `run` use too)."""
