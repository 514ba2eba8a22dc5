"""``python -m cuvil_aot``: the command line (cli/).

Run from a checkout of cuvil_aot itself (its repository root, where the ``--help``
examples are), ``-m`` imports the source tree first, and the source tree has no built
runtime. Then the command runs again on the installed package, with the current
directory still there for the user's own modules.
"""

import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

RERUN = ("import runpy, sys; from pathlib import Path; checkout = Path(sys.argv.pop(1)); "
         "sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != checkout]; "
         "sys.argv[0] = 'cuvil_aot'; "
         "runpy.run_module('cuvil_aot', run_name='__main__', alter_sys=True)")


def installed_instead() -> Path | None:
    """The installed cuvil_aot's folder when this one is a source tree without a built
    runtime that shadows it; else None."""
    here = Path(__file__).resolve().parent
    if any((here / "runtime").glob("native*")):
        return None
    others = [p for p in sys.path if p and Path(p).resolve() != here.parent]
    spec = PathFinder.find_spec("cuvil_aot", others)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders or not any((Path(folders[0]) / "runtime").glob("native*")):
        return None
    return Path(folders[0])


if __name__ == "__main__":
    if installed_instead() is not None:
        checkout = str(Path(__file__).resolve().parent.parent)
        os.execv(sys.executable, [sys.executable, "-c", RERUN, checkout, *sys.argv[1:]])
    from cuvil_aot.cli import main

    sys.exit(main())
