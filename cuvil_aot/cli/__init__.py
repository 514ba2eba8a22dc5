"""``python -m cuvil_aot``: build ahead of time, inspect the cache, show what the compiler
does, and run a script with the import hook. ``--help`` on each command has examples."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence

from cuvil_aot.cli import cache as cli_cache
from cuvil_aot.cli import commands as cli_commands
from cuvil_aot.cli import verify as wheelcheck

EXAMPLES = {
    "main": """
        examples:
          python -m cuvil_aot build examples/models.py      compile into the cache
          python -m cuvil_aot cache info                    where the cache is, its size
          python -m cuvil_aot show examples.models:softmax  IR after each pass, and the C
          python -m cuvil_aot run train.py --epochs 3       run with the import hook on
    """,
    "build": """
        Each module's functions are compiled into one extension, stored in the cache
        (CUVIL_AOT_CACHE_DIR, else the per-user cache). A directory means every .py file
        under it that uses cuvil_aot.optimize. Exits 1 if any module fails, after printing
        the diagnostics.

        examples:
          python -m cuvil_aot build examples/models.py
          python -m cuvil_aot build mypkg -j 4              a whole package, 4 at a time
          python -m cuvil_aot build mypkg.layers --inplace  ship it next to the source:
                                                            mypkg/layers.cuvil_aot.json + .so
    """,
    "show": """
        Prints, for each marked function and signature, the IR after every pass (the
        fusion pass lists its kernels: the fusion groups), the fusions it refused and why,
        then the generated C (of FUNCTION alone when one is named; --module-c for all).

        examples:
          python -m cuvil_aot show examples.models
          python -m cuvil_aot show examples/models.py:layer_norm --no-c
    """,
    "run": """
        Runs a script (or -m MODULE) as __main__ with the import hook installed, as
        cuvil_aot.install() would: marked modules it imports are bound to their compiled
        extensions at import (CUVIL_AOT_MODE decides whether a miss compiles).

        examples:
          python -m cuvil_aot run serve.py --port 8080
          CUVIL_AOT_MODE=strict python -m cuvil_aot run -m mypkg.serve
    """,
    "verify": """
        Re-hashes every file of each installed wheel that cuvil_aot's PEP 517 backend built
        against its RECORD, and checks that its build manifest (.dist-info/
        cuvil_aot_build.json), each prebuilt manifest and each extension agree. Nothing
        is imported or loaded. Exits 1 if anything differs. See SECURITY.md.

        examples:
          python -m cuvil_aot verify                  every such wheel installed here
          python -m cuvil_aot verify mypkg otherpkg   these distributions
    """,
    "hook": """
        The .pth file makes every Python start check CUVIL_AOT_HOOK: with CUVIL_AOT_HOOK=1
        the import hook is installed at startup, without it nothing is imported.

        examples:
          python -m cuvil_aot hook enable --user && CUVIL_AOT_HOOK=1 python app.py
          python -m cuvil_aot hook status
    """,
}


def _parser(name: str, sub: argparse._SubParsersAction[argparse.ArgumentParser] | None,
            help: str) -> argparse.ArgumentParser:
    kwargs = {
        "description": help,
        "epilog": textwrap.dedent(EXAMPLES.get(name, "")),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    if sub is None:
        return argparse.ArgumentParser(prog="python -m cuvil_aot", **kwargs)  # type: ignore[arg-type]
    return sub.add_parser(name, help=help, **kwargs)  # type: ignore[arg-type]


def build_parser() -> argparse.ArgumentParser:
    parser = _parser("main", None, "cuvil_aot: ahead-of-time compiler for NumPy-style code")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = _parser("build", sub, "compile modules into the cache (or next to them)")
    build.add_argument("targets", nargs="+", metavar="PATH_OR_MODULE")
    build.add_argument("--inplace", action="store_true",
                       help="also write <module>.cuvil_aot.json and the extension next to "
                            "each module (what the import hook prefers)")
    build.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                       help="modules built at the same time (default 1)")
    build.add_argument("--cuda-archs", metavar="ARCHS",
                       help="GPU targets, e.g. sm_80,sm_90,compute_90, or none (default: "
                            "CUVIL_AOT_CUDA_ARCHS, else the GPUs of this machine)")
    build.set_defaults(run=cli_commands.cmd_build)

    cli_cache.add_parser(sub, _parser)

    show = _parser("show", sub, "the IR after each pass, fusion groups, refusals, the C")
    show.add_argument("target", metavar="MODULE[:FUNCTION]")
    show.add_argument("--no-c", action="store_true", help="leave out the generated C")
    show.add_argument("--module-c", action="store_true",
                      help="with MODULE:FUNCTION, the C of the whole module, not the function's")
    show.add_argument("--timings", action="store_true",
                      help="build the module (not through the cache) and print how long each "
                           "stage took, instead of the IR and the C")
    show.set_defaults(run=cli_commands.cmd_show)

    run = _parser("run", sub, "run a script with the import hook installed")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    run.add_argument("script", nargs="?", help="the script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    run.set_defaults(run=cli_commands.cmd_run)

    verify = _parser("verify", sub, "check installed cuvil_aot-built wheels against their files")
    verify.add_argument("distributions", nargs="*", metavar="DISTRIBUTION")
    verify.set_defaults(run=wheelcheck.cmd_verify)

    hook = _parser("hook", sub, "opt in to CUVIL_AOT_HOOK=1 through a .pth file")
    hook.add_argument("action", choices=("enable", "disable", "status"))
    hook.add_argument("--user", action="store_true", help="the user site-packages")
    hook.set_defaults(run=cli_commands.cmd_hook)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.run
    if args.command == "run" and not (args.module or args.script):
        parser.error("run: give a script or -m MODULE")
    if args.command == "run" and args.module and args.script:
        args.args.insert(0, args.script)  # 'run -m mod a b': a is the module's argument
    try:
        return command(args)
    except BrokenPipeError:  # 'python -m cuvil_aot show mod | head'
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
