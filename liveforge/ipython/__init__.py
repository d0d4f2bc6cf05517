"""The IPython/Jupyter extension (`%load_ext liveforge`, or `%load_ext liveforge.ipython`):
file saves applied before each cell and the `%lf_*` magics over one Runtime (`_extension`),
and the names the user took from a changed module kept in step with it (`_names`).
"""

# `__all__` is the public surface; `FileTimes` (`X as X`) stays importable from
# `liveforge.ipython`, as it was when the extension was one module.
from liveforge.ipython._extension import FileTimes as FileTimes
from liveforge.ipython._extension import (
    LiveforgeMagics,
    load_ipython_extension,
    unload_ipython_extension,
)

__all__ = ["LiveforgeMagics", "load_ipython_extension", "unload_ipython_extension"]
